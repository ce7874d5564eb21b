"""Built-in network plugins: the proxy's transport when no other plugin gives one."""
