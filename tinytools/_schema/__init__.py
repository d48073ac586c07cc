"""The schema layer: a function's signature, hints and docstring become one canonical JSON Schema.

The modules, in the order a tool's definition flows through them:

- `signatures`: read a function once into its parameters (`Slot`), injected ones (`Injected`)
  told apart, and render its input and output schemas; `callables` says what kind of callable it
  is and where its hints and docstring are; `docstrings` reads descriptions (a class's too);
  `annotations` reads ``Annotated`` metadata (`Param`, annotated-types, pydantic ``Field``).
- `hints`: each type hint becomes a schema and a converter back, from `type_forms` (how a typing
  form is recognised), `fields` (dataclasses and TypedDicts), `pydantic_models`, `fragments`
  (unions, enums, defaults, a schema's part at a place) and `converters` (JSON values to the
  declared types); `keyword_order` writes every schema's keywords in one order.
- `input_schema`: the `InputSchema` envelope: parse (`anchors` writes plain-name anchors as the
  pointers they stand for), refuse what cannot be enforced, compile the validator (`codegen`,
  `references` for shared definitions, `patterns` and `backtracking` for regular expressions);
  a failed check becomes an `ArgumentsError` (`validation_failures`, and
  `nested_failures` for every problem inside one argument).
- `strict_json` reads a call's arguments strictly (text decoded, objects copied, ambiguity
  refused); `fast_decode` is the typed fast way in: a call's JSON straight to positional arguments.
- `strict_mode` renders what a strict provider is shown, and maps its ``null``s back.
- `compatible` says whether the values of one schema fit another (a call plan's reference from
  one tool's output into another tool's parameter).
"""

__all__: list[str] = []
