"""The JSON API: views, the schema its bodies are validated with, its error answers."""
