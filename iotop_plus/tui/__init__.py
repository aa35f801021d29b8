"""The Textual TUI: a thin App, the main screen that owns its state, and the widgets."""
