"""The schema layer: type hints and docstrings become one canonical JSON Schema per tool.

`hints` turns Python types into schemas and converters, `docstrings` reads descriptions,
`keyword_order` writes every schema's keywords in one order, `validation` holds the
`InputSchema` envelope and compiles its validator (`codegen`, `references`, `messages`,
`nested_errors`, `patterns`), `arguments` decodes a call's arguments strictly, `reader` is the typed
fast way in, and `strict` renders what a strict provider is shown.
"""

__all__: list[str] = []
