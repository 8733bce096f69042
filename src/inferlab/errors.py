"""Domain errors: each one is a user-facing message, turned into exit code 2 at the CLI."""


class InferlabError(Exception):
    """A problem the user can fix; its message says what to do."""


class UnitError(InferlabError):
    """A quantity that could not be parsed ("16GB", "3.35TB/s", ...)."""


class SpecError(InferlabError):
    """An unknown or malformed model / hardware / dtype specification."""


class ServerError(InferlabError):
    """A server that cannot be reached or does not speak the OpenAI API."""


class ConfigError(InferlabError):
    """A config value the library refuses, naming the config fields it concerns in braces
    ("{requests_per_user} must be >= 1"). Read alone it names the fields; the CLI words it
    with the flags that set them (cli.py FLAG_NAMES), so the user reads what to fix.
    The library never knows a flag's name."""

    def __init__(self, template: str) -> None:
        super().__init__(worded(template, {}))
        self.template = template

    def worded(self, names: dict[str, str]) -> str:
        """The message with each {field} replaced by its name in `names` (else the field)."""
        return worded(self.template, names)


def worded(template: str, names: dict[str, str]) -> str:
    """`template` with each {field} written as names[field] (or as the field itself), and
    {{ / }} as a literal brace (text a user typed goes in through `literal`)."""
    out, i = [], 0
    while i < len(template):
        two = template[i : i + 2]
        if two in ("{{", "}}"):
            out.append(two[0])
            i += 2
            continue
        end = template.find("}", i + 1) if template[i] == "{" else -1
        if end > i and template[i + 1 : end].isidentifier():
            out.append(names.get(template[i + 1 : end], template[i + 1 : end]))
            i = end + 1
            continue
        out.append(template[i])
        i += 1
    return "".join(out)


def literal(text: str) -> str:
    """`text` (a value the user gave) safe inside a ConfigError template: braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")
