"""The settings every `streamlit run app.py` gets (.streamlit/config.toml)."""

from conftest import APP


def test_server_config_is_offline_and_does_not_watch_the_venv():
    """The settings every `streamlit run app.py` gets: no telemetry or address look-up, and no
    recursive file watcher over the checkout (its .venv made the first page load 1.5 s slower)."""
    import tomllib

    config = tomllib.loads((APP.parent / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    assert config["browser"] == {"gatherUsageStats": False, "serverAddress": "localhost"}
