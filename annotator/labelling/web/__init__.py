"""The web pages: the typed request, forms, one module per page family, middleware."""
