"""The command line: ``python -m specviz``. Its run flags come from the settings' declarations."""
