"""``python -m workbench``: the ``workbench`` command, for an interpreter whose scripts folder is not on PATH
(a GPU machine's system Python with the checkout on ``PYTHONPATH``)."""

from workbench.cli import app

if __name__ == "__main__":
    app(prog_name="workbench")
