"""What the server does before anyone asks for a page.

`streamlit run app.py` finds the ASGI app that app.py declares (st.App) and starts it; its lifespan
calls ``begin``, which imports what the first page needs (torch, pandas, the pages' modules) and loads
the checkpoints in a thread, while the browser is still loading Streamlit's front end (~1.2 s on a
2-core machine, time the server otherwise spends idle). The first script run calls ``wait`` before
it imports a page: the modules then come from sys.modules, and no two threads ever import the same
modules at once (which Python can refuse as a deadlock when their imports are circular).

Nothing here is a result: the page still builds, measures and draws everything itself. Under AppTest
no lifespan runs and ``wait`` returns at once."""

import threading

_thread: threading.Thread | None = None
_lock = threading.Lock()


def _warm() -> None:
    try:
        import ui.home  # noqa: F401  torch, pandas, the engine, the drafters
        import ui.step  # noqa: F401  the step page's views and charts
        from specviz.kernels import native
        from ui.common import checkpoints

        native.prepare_in_background()  # loaded from .cache/kernels/, or built while the page draws
        checkpoints()
    except Exception:  # noqa: BLE001  the page meets the same problem and says it in one line
        pass


def begin() -> None:
    """Start the warm-up, once per process."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_warm, name="specviz-warm-up", daemon=True)
            _thread.start()


def wait() -> None:
    """Return when the warm-up is done (at once where none was started)."""
    with _lock:
        thread = _thread
    if thread is not None:
        thread.join()
