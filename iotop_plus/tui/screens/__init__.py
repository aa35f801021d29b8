"""The TUI's screens: the main screen and its parts, help, dialogs, the experiments."""
