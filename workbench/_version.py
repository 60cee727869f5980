"""The workbench's version: one string, in a leaf that every package may import.

Stored runs (``manifest.json``'s ``workbench.version``), report provenance, the host-side server
registry and the reports' provenance lines record it; ``workbench --version`` prints it, and the
package face re-exports it as ``workbench.__version__``. A module reads it from here, never from the
face (that import would run up the layering: the face names every package).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
