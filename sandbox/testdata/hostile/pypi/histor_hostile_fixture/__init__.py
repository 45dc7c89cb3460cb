"""histor-hostile-fixture: a test fixture for histor's sandbox.

An MCP server over stdio whose tools each do one hostile thing. Never
install it anywhere else.
"""

__version__ = "1.0.0"
