"""The server's warm-up (ui/startup.py): `streamlit run app.py` finds the server app.py declares, and its
start-up imports the first page's modules and loads the checkpoints before any page is asked for."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_streamlit_run_finds_the_server_app():
    """app.py declares an st.App, so `streamlit run app.py` starts it (and its lifespan) rather than a plain
    script server; found the way Streamlit finds it, from the source."""
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.app_name == "app", found


def test_warm_up_imports_the_pages_and_loads_the_checkpoints():
    """In a fresh process: nothing heavy is imported by app's startup module itself; after begin() and wait()
    the pages' modules are imported and the checkpoints loaded, once."""
    code = """
import sys
from ui import startup
assert "torch" not in sys.modules and "ui.home" not in sys.modules, "startup itself imports nothing heavy"
startup.wait()  # nothing started: returns at once
assert "ui.home" not in sys.modules
startup.begin(); startup.begin(); startup.wait()
from ui.common import checkpoints
assert {"ui.home", "ui.step", "torch"} <= set(sys.modules)
assert checkpoints.cache_info().currsize == 1
target, tiny = checkpoints()
assert target.name == "target" and tiny.name == "tiny"
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
