"""A real OpenID Connect provider for the single sign-on tests: a tiny Django project on
django-oauth-toolkit with OIDC on (RS256 ID tokens, PKCE, userinfo, JWKS), run as its own
process with its own SQLite file (:mod:`.serve`)."""
