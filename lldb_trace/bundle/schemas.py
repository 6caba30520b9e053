"""The bundle JSON Schemas shipped in ``schemas/``: lookup, validation with JSON-path errors, rendering."""

import json
import re
from functools import cache
from importlib import resources

from ..errors import LldbTraceError

SCHEMA_DIR = resources.files("lldb_trace") / "schemas"
UINT64_MAX = (1 << 64) - 1
_ADDRESS = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")


def address_value(value):
    """An address given as an int, a decimal string or a 0x-prefixed hex string (leading zeros allowed)."""
    if isinstance(value, int):
        return value
    hexadecimal = value[:2].lower() == "0x"
    digits = (value[2:] if hexadecimal else value).lstrip("0")
    if len(digits) > 40:  # far past 64 bits; Python refuses to parse decimal strings of over 4300 digits
        return UINT64_MAX + 1
    return int(digits or "0", 16 if hexadecimal else 10)


def _fits_64_bits(value):
    """An address below 2**64; what is not an address at all is for type and pattern to reject."""
    if isinstance(value, str) and not _ADDRESS.fullmatch(value):
        return True
    return not isinstance(value, int | str) or address_value(value) <= UINT64_MAX


def _is_integer(_checker, instance):
    """JSON Schema counts 5.0 as an integer; a pid, a size or an address written as a float is a mistake."""
    return isinstance(instance, int) and not isinstance(instance, bool)


@cache
def _checking():
    """``(jsonschema, validator class, format checker)``, made on first use: importing jsonschema costs every
    LLDB start-up 0.1 s when the plugin is imported, and only loading or saving a bundle needs it."""
    import jsonschema

    formats = jsonschema.FormatChecker([])
    formats.checks("uint64")(_fits_64_bits)
    type_checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
    return jsonschema, jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=type_checker), formats


class SchemaError(LldbTraceError):
    """An unknown schema name, or a document that breaks its schema."""


def schema_names():
    """Names accepted by ``trace schema``: one per file in ``schemas/``."""
    return sorted(path.name.removesuffix(".json") for path in SCHEMA_DIR.iterdir() if path.name.endswith(".json"))


@cache
def schema(name):
    """The schema called ``name`` as a dict."""
    if name not in schema_names():
        raise SchemaError(f"no trace schema named '{name}': the schemas are {', '.join(schema_names())}")
    return json.loads((SCHEMA_DIR / f"{name}.json").read_text())


def validate(document, name):
    """Raise SchemaError naming the JSON path of the most relevant violation of schema ``name``."""
    check(document, schema(name))


def check(document, rules):
    """Raise SchemaError naming the JSON path of the most relevant violation of the schema ``rules`` (a dict)."""
    jsonschema, validator_class, formats = _checking()
    validator = validator_class(rules, format_checker=formats)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        raise SchemaError(describe(error))


def json_path(parts):
    """``processes[0].threads[1].tid`` from jsonschema's path parts."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".")


def _shown(value):
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


_JSON_TYPES = {"integer": "an integer", "string": "a string", "object": "an object", "array": "an array"}


def describe(error):
    """One line for a jsonschema ValidationError: the JSON path, what was expected, what was found."""
    path = json_path(error.absolute_path)
    kind, expected, found = error.validator, error.validator_value, error.instance
    conditional = "then" in error.relative_schema_path  # a rule that holds only in some bundles: say which
    if kind == "required":
        missing = next(key for key in expected if key not in found)
        why = error.schema["description"] if conditional else "required but missing"
        return f"{json_path([*error.absolute_path, missing])}: {why}"
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        extra = next(key for key in found if key not in known)
        where = json_path([*error.absolute_path, extra])
        return f"{where}: unknown property (expected one of: {', '.join(known)})"
    if kind == "dependentRequired":
        key = next(k for k, needs in expected.items() if k in found and any(n not in found for n in needs))
        return f"{json_path([*error.absolute_path, key])}: needs {', '.join(expected[key])} as well"
    path = path or "(top level)"
    if kind == "oneOf":  # forms told apart by the key each requires
        keys = " or ".join(f"'{form['required'][0]}'" for form in expected)
        return f"{path}: expected exactly one of {keys}, got {'both' if not error.context else 'neither'}"
    if kind == "uniqueItems":
        return f"{path}: expected each item once, got {_shown(found)}"
    if kind == "type":
        types = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(_JSON_TYPES.get(t, t) for t in types)
        return f"{path}: expected {wanted}, got {_shown(found)}"
    if kind == "enum":
        return f"{path}: expected one of {', '.join(map(_shown, expected))}, got {_shown(found)}"
    if kind == "const":
        return f"{path}: expected {_shown(expected)}, got {_shown(found)}"
    if kind == "pattern":
        wanted = error.schema.get("description", f"a string matching {expected}").rstrip(".")
        return f"{path}: expected {wanted[0].lower() + wanted[1:]}, got {_shown(found)}"
    if kind == "minItems" and conditional:
        return f"{path}: {error.schema['description']}"
    if kind in ("minimum", "maximum", "minItems"):
        wanted = {"minimum": f"a value >= {expected}", "maximum": f"a value <= {expected}"}.get(kind)
        wanted = wanted or f"at least {expected} item{'s' if expected > 1 else ''}"
        return f"{path}: expected {wanted}, got {_shown(found)}{_why(error.schema)}"
    if kind == "format":
        return f"{path}: {_shown(found)} does not fit in 64 bits (at most {UINT64_MAX:#x})"
    if kind == "minLength":
        return f"{path}: expected a non-empty string"
    return f"{path}: {error.message}"


def _why(node):
    """`` (the node's description)`` for a bound that needs explaining: only single-typed nodes carry one."""
    text = node.get("description", "") if isinstance(node.get("type"), str) else ""
    return f" ({text[0].lower()}{text[1:].rstrip('.')})" if text else ""


def render_schema(name):
    """The schema as annotated JSON, the way the processor-trace RFC prints it."""
    document = schema(name)
    lines = [f"// {document['title']}", *_render(document, document, 0, ""), "// Notes:"]
    lines.append("// - All paths are either absolute or relative to the bundle file.")
    lines.append("// - A module's 'file' is read when present, else its 'systemPath'.")
    if "then" in document:  # a rule that holds only in some bundles
        lines += [f'// - "{key}" is {document["then"]["description"]}.' for key in document["then"]["required"]]
    lines += [f'// - "{key}": {text}' for key, text in _extensions(document)]
    return "\n".join(lines)


def _extensions(node):
    """``(key, description)`` of the objects and arrays lldb_trace adds to the format (leaves say it inline)."""
    for key, child in node.get("properties", {}).items():
        text = child.get("description", "")
        if child.get("type") in ("object", "array") and text.startswith(("lldb_trace extension", "lldb_trace's")):
            yield key, text
        yield from _extensions(child.get("items", child))


def _render(node, root, depth, prefix, suffix=""):
    """Lines for one schema node: objects and arrays expand, leaves become one word."""
    node = _deref(node, root)
    pad = "  " * depth
    comment = f"  // {node['description']}" if "description" in node else ""
    if node.get("type") == "object" and "properties" in node:
        lines = [f"{pad}{prefix}{{"]
        required = set(node.get("required", ()))
        properties = list(node["properties"].items())
        for number, (key, child) in enumerate(properties, 1):
            optional = "" if key in required else "?"
            comma = "," if number < len(properties) else ""
            lines += _render(child, root, depth + 1, f'"{key}"{optional}: ', comma)
        return [*lines, f"{pad}}}{suffix}"]
    if node.get("type") == "array":
        return [f"{pad}{prefix}[", *_render(node["items"], root, depth + 1, ""), f"{pad}]{suffix}"]
    return [f"{pad}{prefix}{_leaf(node)}{suffix}{comment}"]


def _deref(node, root):
    while "$ref" in node:
        extra = {k: v for k, v in node.items() if k != "$ref"}
        node = {**root["$defs"][node["$ref"].rsplit("/", 1)[1]], **extra}
    return node


def _leaf(node):
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return " | ".join(json.dumps(value) for value in node["enum"])
    types = node.get("type", "any")
    return " | ".join(types) if isinstance(types, list) else types
