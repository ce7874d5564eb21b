"""Sessions: a per-session daemon owning a PTY, its socket protocol, and the clients."""
