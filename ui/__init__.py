"""The app's Streamlit layer: one module per page (each with ``render()``, called by its thin file in
pages/) and the pieces pages share (controls, navigator, round_view, knobs, tree_view, nasd_view,
common, widgets). specviz/ computes; nothing there imports streamlit."""
