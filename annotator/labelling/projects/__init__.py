"""Projects: creation, settings changes, who may see what, retention, the demo."""
