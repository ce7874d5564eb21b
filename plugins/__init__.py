"""egg's built-in plugins. Each module is registered through its own ``egg`` entry point."""
