"""Provider adapters: each one exports declarations, reads calls, and writes results.

Import an adapter by its path; nothing here imports a provider SDK::

    from tinytools.providers import openai   # Chat Completions (and strict mode)
    from tinytools.providers import openai_responses, anthropic, gemini, mcp

Every adapter offers the same three verbs: ``export_tools(toolbox, **options)`` gives the
declarations in the provider's shape, ``read_calls(response)`` reads `ToolCall` objects out of
a response (a plain dict or the SDK's own object), and ``write_results(results)`` gives the
messages, items, blocks or parts that carry the results back. `tinytools.providers.mcp` also
serves a toolbox as an MCP server over stdio.
"""

__all__: list[str] = []
