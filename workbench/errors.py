"""The workbench's exception tree.

Every error the library raises on purpose derives from :class:`WorkbenchError`,
and its message says what failed, where (host, command, file), and what to do::

    WorkbenchError
    ├── ConfigError            bad parameters, variant or profile files, CLI input
    │   └── FlagError          a launch_server flag the SGLang version's parser would
    │                          refuse (workbench.source.FlagError)
    ├── HostError              a host could not be reached or used
    │   ├── HostUnreachable    TCP connect, DNS, a ProxyJump hop or the SSH handshake failed
    │   ├── HostKeyError       the host key is unknown (refused by default) or changed
    │   ├── HostAuthError      the host accepted none of the keys offered
    │   ├── ConnectionLost     an open SSH connection dropped (partial result attached)
    │   ├── DiskFullError      a file here could not be written for lack of space (files
    │                          written before are intact; a re-run resumes a sweep)
    │   └── CommandError       a command ran and failed (exit status, stderr tail)
    │       ├── CommandTimeout the command outlived its timeout
    │       └── HelperError    a remote helper (remote/<name>.py) refused its request:
    │                          .helper, .host, its error quoted (workbench.hosts.call_helper)
    ├── ServerError            a server variant failed to start, answer or stop
    │   └── ServerStartError   it never became ready: .kind (classified from its log; every
    │                          kind is in workbench.servers._failures.KINDS, each said in
    │                          that module's docstring), .suggestion (one line: what to
    │                          try), .log_tail
    ├── BenchmarkError         the load generator could not measure a level
    ├── SourceError            source inspection failed (download, parse, a source tree the
    │                          helper refused, such as a root that does not exist)
    └── ReportError            a notebook failed while regenerating a report

Third-party exceptions are translated at the boundary (``raise X(...) from exc``):
paramiko's and the socket's in :mod:`workbench.hosts._sshconnect` and
:mod:`workbench.hosts._ssh`. The SSH errors are importable from
:mod:`workbench.hosts` too. So are the workbench's own between packages: a
:class:`HelperError` from a helper the source package runs (``find_definitions``,
``server_flags``) becomes a :class:`SourceError` where that package calls it
(:mod:`workbench.source._helper_call`); the other helpers (``gpu_inventory``,
``checkout_state``, ``process_status``, ``server_watchdog``) raise it as it is.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Root of every error the workbench raises on purpose."""


class ConfigError(WorkbenchError, ValueError):
    """Invalid user input: parameters, variant/profile files, command-line values."""


class HostError(WorkbenchError):
    """A host could not be reached or used."""


class HostUnreachable(HostError):
    """The host (or a ProxyJump hop) could not be reached or would not speak SSH."""


class HostKeyError(HostError):
    """The host's key is not in known_hosts (refused by default) or differs from it."""


class HostAuthError(HostError):
    """The host accepted none of the keys offered (agent or identity files)."""


class ConnectionLost(HostError):
    """An established SSH connection dropped while it was being used.

    Attributes:
        result: the partial :class:`workbench.hosts.CommandResult` when a command
            was running (output so far; exit status -1), else None.
    """

    def __init__(self, message: str, result: object | None = None) -> None:
        super().__init__(message)
        self.result = result


class DiskFullError(HostError):
    """A file on this machine could not be written: the disk (or a quota or file-size limit) is full.

    Writes are atomic, so the file keeps its previous content and every file written
    before is intact.

    Attributes:
        path: the file that could not be written.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class CommandError(HostError):
    """A command ran on a host and failed.

    Attributes:
        result: the :class:`workbench.hosts.CommandResult` of the failed command.
    """

    def __init__(self, message: str, result: object | None = None) -> None:
        super().__init__(message)
        self.result = result


class CommandTimeout(CommandError):
    """A command on a host ran past its timeout and was killed."""


class HelperError(CommandError):
    """A remote helper script (``remote/<name>.py``) ran on a host and refused its request.

    The helper answered ``{"ok": false, "kind": "request"}`` (exit status 2): the request
    cannot be served there, e.g. a directory that does not exist or a malformed field.
    A helper that crashed or gave no answer is a plain :class:`CommandError`.

    Attributes:
        result: the :class:`workbench.hosts.CommandResult` of the helper's run.
        helper: the helper's name (``"checkout_state"``).
        host: the host's name.
        error: the helper's own error message.
    """

    def __init__(
        self, message: str, result: object | None = None, *, helper: str = "", host: str = "", error: str = ""
    ) -> None:
        super().__init__(message, result)
        self.helper = helper
        self.host = host
        self.error = error


class ServerError(WorkbenchError):
    """A server variant failed to start, answer, or stop."""


class ServerStartError(ServerError):
    """A server never became ready.

    Attributes:
        log_tail: the last lines of the server log (str), for the user to read.
        kind: what went wrong, classified from the log (one of
            ``workbench.servers._failures.KINDS``; ``"unknown"`` when not classified).
        suggestion: one line telling the user what to try ('' when none).
    """

    def __init__(self, message: str, log_tail: str = "", *, kind: str = "unknown", suggestion: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail
        self.kind = kind
        self.suggestion = suggestion


class BenchmarkError(WorkbenchError):
    """The load generator could not measure a level (server unreachable, all requests failed).

    Attributes:
        kind: the server's failure classified from its log, when the server died or stopped answering during
            the level (as a :class:`ServerStartError`'s); None otherwise.
        log_tail: the server log's last lines read then ('' when none).
        suggestion: one line telling the user what to try ('' when none).
    """

    def __init__(self, message: str, *, kind: str | None = None, log_tail: str = "", suggestion: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.log_tail = log_tail
        self.suggestion = suggestion


class SourceError(WorkbenchError):
    """Source inspection failed: a release could not be downloaded or a tree not read."""


class ReportError(WorkbenchError):
    """A notebook failed while regenerating a report; the partial output notebook is kept.

    Attributes:
        bad_input: the notebook refused its input (a parameter, a variant file): exit status 2.
    """

    bad_input: bool = False
