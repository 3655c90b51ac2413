"""`tune-ledger mcp`: the protocol's steps as MCP tools over stdio (DESIGN §8), the top layer.

Each tool runs the CLI command of the same step in-process (`invoke`), on OpLedgers kept warm
between calls; `steps` and `reads` declare the tools and their argument schemas, `server`
assembles them with the resources and the prompt. Needs the optional extra `mcp`.
"""
