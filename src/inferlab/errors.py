"""Domain errors: each one is a user-facing message, turned into exit code 2 at the CLI."""


class InferlabError(Exception):
    """A problem the user can fix; its message says what to do."""


class UnitError(InferlabError):
    """A quantity that could not be parsed ("16GB", "3.35TB/s", ...)."""


class SpecError(InferlabError):
    """An unknown or malformed model / hardware / dtype specification."""


class ServerError(InferlabError):
    """A server that cannot be reached or does not speak the OpenAI API."""
