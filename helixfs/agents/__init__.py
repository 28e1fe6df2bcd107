"""Agent hosts: registering `helix mcp` in them (connect), Claude Code's hooks (hooks).

A thin surface like mcp/: it edits the hosts' own config files and turns a hook's JSON
into the context a host expects, over the same Memory and Repository calls as the CLI.
"""
