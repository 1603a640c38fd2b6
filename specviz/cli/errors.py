"""User errors on the command line: one line on stderr, exit status 2, never a traceback."""

import argparse

MAX_ERROR = 300  # characters of an error line; a value that would make it longer is cut


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def one_line(message: str, limit: int = MAX_ERROR) -> str:
    """The message on one line, cut to ``limit`` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def checked(check, *args):
    """``check(*args)``, its ValueError as a CLIError."""
    try:
        return check(*args)
    except ValueError as e:
        raise CLIError(str(e)) from None


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise CLIError(message)
