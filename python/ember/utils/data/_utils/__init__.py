"""What the DataLoader's main process and its workers share: the polling
interval, the interpreter-exit flag, and ExceptionWrapper (an exception with its
traceback as text, to re-raise in another process)."""
import atexit
import sys
import traceback

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks that the other side is alive: a worker checks its
parent, the main process its workers (which it also sees exit at once)."""

python_exit_status = False
"""True once the interpreter is exiting: multiprocessing's own exit handler then
ends the (daemonic) workers, and the iterators must not touch their queues."""


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


class KeyErrorMessage(str):
    """A str whose repr is itself: KeyError shows its argument's repr, which would
    turn the traceback's newlines into \\n."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """Wraps an exception plus traceback to communicate across threads or processes."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))  # text: a traceback does not pickle
        self.where = where

    def reraise(self):
        """Reraises the wrapped exception in the current thread."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # an exception class that takes other arguments
            raise RuntimeError(msg) from None
        raise exception


from . import collate, fetch, worker  # noqa: E402,F401
