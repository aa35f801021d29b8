"""The TUI's widgets: the device table, charts, side panels and their rows."""
