"""Django settings, read from the environment.

Environment variables (all optional for local development):

* ``DEBUG`` (``1``/``true`` to enable; default off).
* ``SECRET_KEY``: required unless ``DEBUG`` is on (then a fixed development key is used).
* ``ALLOWED_HOSTS``: comma-separated host names (default ``127.0.0.1,localhost``).
* ``HTTPS`` (default: on unless ``DEBUG``): secure cookies, https redirect, HSTS.
* ``EMAIL_HOST`` (default empty: no mail): the password-reset pages exist only when set
  (with Django's ``EMAIL_*`` settings from the environment below).
* ``TRUST_X_FORWARDED_PROTO``: trust the proxy's ``X-Forwarded-Proto`` header (default off).
* ``DATABASE_URL``: any URL dj-database-url understands, e.g.
  ``postgres://user@host:5432/annotator``. Default: the SQLite file ``var/db.sqlite3``.
* ``CELERY_BROKER_URL``: e.g. ``redis://127.0.0.1:6379/0`` or ``amqp://...``. Default
  ``filesystem://``: kombu's filesystem transport with its folders under ``var/broker/``.
  Why that default: it needs no service and no extra package, the worker is a real separate
  process (the same code path as with Redis), and messages are plain files that survive a
  restart of either process. It suits one machine; use Redis or RabbitMQ for several hosts.
* ``CELERY_TASK_DEFAULT_QUEUE``: queue name (default ``annotator``).
* ``CELERY_HEAVY_QUEUE``: queue of imports, planner runs, cost views and refit jobs (default
  ``<queue>-heavy``).
* ``PLANNER_MAX_COST``: largest planner run, items x candidates x permutations (default 200000).
* ``PLANNER_MAX_QUEUED``: planner runs of one project waiting or running at once (default 2).
* ``BASELINE_MAX_ITEMS``: gold items the dashboard's random-querying baseline replays (default 2000).
* ``DASHBOARD_LABEL_WINDOW``: the dashboard's per-annotator figures, agreement and quality cover
  the project's newest labels, this many (default 5000; the JSON API's agreement and quality all).
* ``ANNOTATOR_SNAPSHOT_SECONDS``: while a project serves honeypots or audits, its annotators and
  reviewers see its figures (dashboard, metrics API, waiting count) as a snapshot rebuilt at most this often
  (default 600; 0: live; docs/teams.md, "Honeypots").
* ``REFIT_REQUEST_MAX_LABELS``: the newest labels an export fits its batch refit on in the request
  when no refit job's result is current (default 5000; the job fits on every label).
* ``REFIT_MAX_UNLABELLED``: most model-decided items a refit job reads to self-train on (default
  20000; 0: labels only; docs/algorithms/refit.md).
* ``BROKER_TIMEOUT_SECONDS``: longest wait for one broker connect or command (default 0.5).
* ``JOB_STALE_SECONDS``: an import or planner run silent this long is restarted (default 60).
* ``IMPORT_FIRST_CHUNK`` / ``IMPORT_CHUNK``: records in an import's first chunk (default 200) and
  in each later one (default 2000); the chunks are spread over the heavy queue's workers.
* ``DECIDE_ASYNC_COMMIT`` (default on): PostgreSQL commits the label pipeline's transactions
  without waiting for their WAL to reach the disk (``synchronous_commit = off`` for them alone;
  what a crash can lose and why it stays consistent: docs/operations.md, "Table design").
* ``MAX_UPLOAD_BYTES``: largest accepted upload file (default 2 GB; uploads are streamed).
* ``MAX_BODY_BYTES``: largest request body besides upload files, e.g. a JSON API batch
  (default 50 MB).
* ``VAR_DIR``: folder for the SQLite file and the broker folders (default ``<repo>/var``).
* ``LOGIN_FAILURE_LIMIT`` (default 5) and ``LOGIN_COOLOFF_MINUTES`` (default 15): login
  throttling, see ``AXES_*`` below.
* ``WEBHOOK_ALLOWED_NETWORKS`` (default empty): comma-separated networks (``10.0.0.0/8``,
  ``127.0.0.1/32``) webhooks may be delivered to although they are private, loopback, link-local
  or otherwise not global; ``WEBHOOK_TIMEOUT_SECONDS`` (default 5: the wall-clock deadline of one
  post, answer included) and ``WEBHOOK_RETRY_SECONDS``
  (default ``10,60,300,1800,7200``: the waits before each retry) (docs/webhooks.md).
* ``OIDC_RP_CLIENT_ID`` (default empty: single sign-on off) with ``OIDC_RP_CLIENT_SECRET``,
  ``OIDC_OP_AUTHORIZATION_ENDPOINT``, ``OIDC_OP_TOKEN_ENDPOINT``, ``OIDC_OP_USER_ENDPOINT``,
  ``OIDC_OP_JWKS_ENDPOINT``, ``OIDC_OP_ISSUER``, ``OIDC_PROVIDER_NAME`` (the login button's
  "Sign in with ..."), ``OIDC_RP_SIGN_ALGO`` (default RS256), ``OIDC_RP_SCOPES`` (default
  ``openid email profile``): OpenID Connect login (docs/operations.md, "Single sign-on").
* ``LOG_LEVEL`` (default ``INFO``) and ``LOG_FILE`` (optional): see :func:`logging_config`;
  every 500 is logged with its traceback.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue


def env_bool(name: str, default: bool = False) -> bool:
    """True for 1/true/yes/on (any case), False for 0/false/no/off/empty."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))

DEBUG = env_bool("DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("set SECRET_KEY (or DEBUG=1 for local development)")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"
# HTTPS hardening, on by default when DEBUG is off: secure session and CSRF cookies, redirect
# to https, HSTS for a year. HTTPS=0 serves plain http (loopback benchmarks, the test suite).
HTTPS = env_bool("HTTPS", default=not DEBUG)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = 31_536_000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_PRELOAD = HTTPS
# Mail: none unless EMAIL_HOST is set (annotator/urls.py offers password resets only then).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", 25))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "webmaster@localhost")

# Behind a TLS-terminating proxy, trust its X-Forwarded-Proto only when told to: the header is
# spoofable by clients when no proxy sets it.
if env_bool("TRUST_X_FORWARDED_PROTO"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
                 if h.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",  # login throttling (see AXES_* below)
    "mozilla_django_oidc",  # OpenID Connect login, used only when OIDC_RP_CLIENT_ID is set
    "csp",  # Content-Security-Policy header (see CONTENT_SECURITY_POLICY below)
    "annotator.labelling",
]

MIDDLEWARE = [
    "annotator.labelling.api.errors.ApiErrorMiddleware",  # outermost: sees every answer under /api/
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # after the session and the user (cookies only), before anything reads the body (the CSRF
    # check reads request.POST before the view): refuses a body from its headers
    "annotator.labelling.web.limits.RequestSizeLimitMiddleware",
    # inside CSP and auth: the app's 404 page (with its navigation) even under DEBUG
    "annotator.labelling.web.not_found.NotFoundPageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: answers a locked-out login with 429
]

# Login throttling (django-axes; Django has none): after LOGIN_FAILURE_LIMIT wrong passwords
# for one username from one address, that pair is refused (429) for LOGIN_COOLOFF_MINUTES
# even with the right password; a success resets the count. Per (username, address) so that
# one attacker cannot lock every user out, nor one user lock out an office behind one address.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend",
                           # OpenID Connect (annotator/sso.py): answers nothing while SSO is off
                           "annotator.sso.NoRightsOIDCBackend"]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", 5))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("LOGIN_COOLOFF_MINUTES", 15)))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_USERNAME_CALLABLE = "annotator.labelling.web.login_throttle.axes_username"  # bounded to its column

# Content-Security-Policy (django-csp; Django 5.2 has none built in, 6.0 will): only this
# site's own scripts, styles, fonts and requests, images also as data: URIs (the queue inlines
# small images); no inline script or style anywhere (htmx's indicator style is turned off in
# base.html), no plugins, no framing, forms post only here.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

ROOT_URLCONF = "annotator.urls"
WSGI_APPLICATION = "annotator.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"), conn_max_age=60),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write the same file: WAL lets readers run beside the
    # writer, IMMEDIATE transactions take the write lock up front (no lock-upgrade deadlock),
    # and the timeout makes a writer wait for the other instead of failing at once.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    if not os.environ.get("DATABASE_URL"):
        VAR_DIR.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "static_root"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "project-list"
LOGOUT_REDIRECT_URL = "login"

# Uploads are streamed: the request spools a file above 5 MB to a temporary file,
# the view copies it into the database in parts, a worker parses, featurizes and stores it a
# chunk at a time; no step holds the file whole, so the limit can be gigabytes (it bounds the
# disk and database space an upload takes, about twice its size while it is imported).
MAX_UPLOAD_BYTES = int(os.environ.get("MAX_UPLOAD_BYTES", 2 * 1024 * 1024 * 1024))
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024  # larger files spool to a temporary file
# Request bodies other than upload files (JSON API batches, forms) are read into memory.
MAX_BODY_BYTES = int(os.environ.get("MAX_BODY_BYTES", 50 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES
#: Largest batch accepted by ``POST /api/projects/<id>/items``.
API_MAX_BATCH = int(os.environ.get("API_MAX_BATCH", 1000))

# ---------------------------------------------------------------------------------- Celery
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _BROKER_DIR = Path(os.environ.get("BROKER_DIR", VAR_DIR / "broker"))
    for _sub in ("queue", "processed", "control"):
        (_BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # producer and consumer share one folder: messages are files waiting there
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "control_folder": str(_BROKER_DIR / "control"),  # exchange tables (default: ./control)
        "store_processed": False,
        "polling_interval": 0.1,
    }
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "annotator")
# Heavy work apart from labelling: imports and delta-planner runs go to their own
# queue, so a long one never holds the workers that apply labels and decide items. A worker
# started without -Q consumes both queues (`make run`); in production run
# `celery -A annotator worker -Q <default>` and `celery -A annotator worker -Q <default>-heavy`
# apart (docs/operations.md).
CELERY_HEAVY_QUEUE = os.environ.get("CELERY_HEAVY_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-heavy")
CELERY_TASK_QUEUES = [Queue(CELERY_TASK_DEFAULT_QUEUE), Queue(CELERY_HEAVY_QUEUE)]
CELERY_TASK_ROUTES = {f"annotator.labelling.tasks.{name}": {"queue": CELERY_HEAVY_QUEUE}
                      for name in ("import_upload", "import_chunk", "run_planner", "compute_cost_view",
                                   "run_refit")}
#: Records in an import's first chunk (small: its items are decided within seconds) and in each
#: of the others; each chunk is featurized by any heavy-queue worker (annotator/labelling/ingest/fanout.py).
IMPORT_FIRST_CHUNK = int(os.environ.get("IMPORT_FIRST_CHUNK", 200))
IMPORT_CHUNK = int(os.environ.get("IMPORT_CHUNK", 2000))
# Webhook deliveries (annotator/labelling/webhooks/) wait on other servers: the heavy queue,
# never the one that applies labels.
# Webhook deliveries (annotator/labelling/webhooks/) wait on other servers: the heavy queue,
# never the one that applies labels.
CELERY_TASK_ROUTES["annotator.labelling.tasks.deliver_webhooks"] = {"queue": CELERY_HEAVY_QUEUE}
# Keep the worker's database connection between tasks (Celery otherwise closes it after every
# task); annotator/celery.py closes it like Django does between requests: when broken or older
# than CONN_MAX_AGE.
CELERY_DB_REUSE_MAX = 10**9
CELERY_TASK_IGNORE_RESULT = True  # tasks write to the database; nobody waits for results
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True  # a task is acknowledged after it ran ...
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # ... so a killed worker's task is delivered again
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Bounded broker waits: a label is committed before its task is sent, so a broker
# that is down or hung (accepting connections, never answering) must not hold the request. Each
# connect and each broker command gives up after BROKER_TIMEOUT_SECONDS and a publish is not
# retried: the label stays stored and unapplied, and the periodic sweep applies it later.
# max_retries 0: a connect the broker refuses (down, restarting) fails at once; kombu's default
# (used when sending a task: Connection.default_channel) sleeps interval_start, 2 s, before it
# tries again, whatever the timeout. A worker's own consumer connection is not affected: Celery
# passes it broker_connection_max_retries and retries it as before.
BROKER_TIMEOUT_SECONDS = float(os.environ.get("BROKER_TIMEOUT_SECONDS", 0.5))
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_TIMEOUT_SECONDS
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": BROKER_TIMEOUT_SECONDS,
                                       "socket_connect_timeout": BROKER_TIMEOUT_SECONDS,
                                       "max_retries": 0}
elif not CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0}
CELERY_TASK_PUBLISH_RETRY = False
#: Seconds between two runs of the sweep (applies labels whose task was lost, tops up queues).
SWEEP_SECONDS = float(os.environ.get("SWEEP_SECONDS", 30))
HEARTBEAT_SECONDS = float(os.environ.get("HEARTBEAT_SECONDS", 10))
#: An import or planner run whose worker has not reported progress for this long is taken for
#: dead: the page says so and the sweep restarts it (annotator/labelling/engine/jobs.py).
JOB_STALE_SECONDS = float(os.environ.get("JOB_STALE_SECONDS", 60))
#: The label pipeline's transactions commit asynchronously on PostgreSQL
#: (annotator/labelling/engine/pipeline.py).
DECIDE_ASYNC_COMMIT = env_bool("DECIDE_ASYNC_COMMIT", default=True)
# In-memory beat scheduler: the default one persists with shelve (pickle); the schedule is
# just "every SWEEP_SECONDS", so nothing needs persisting.
CELERY_BEAT_SCHEDULER = "celery.beat:Scheduler"
CELERY_BEAT_SCHEDULE = {
    "sweep": {"task": "annotator.labelling.tasks.sweep", "schedule": SWEEP_SECONDS},
    # the dashboard's worker health, per queue: a worker that takes this from the queue records
    # its hostname, the queue and the time
    **{f"heartbeat {queue}": {"task": "annotator.labelling.tasks.heartbeat", "schedule": HEARTBEAT_SECONDS,
                              "options": {"queue": queue}}
       for queue in (CELERY_TASK_DEFAULT_QUEUE, CELERY_HEAVY_QUEUE)},
}
#: The delta planner refuses a run whose cost (items x candidates x permutations, the number of
#: item steps it replays) is above this (a text project took 25 min and 10 GB).
PLANNER_MAX_COST = int(os.environ.get("PLANNER_MAX_COST", 200_000))
#: Planner runs of one project waiting or running at once; one more is refused (409) with a
#: message until one ends or is cancelled: one admin cannot fill the heavy queue.
PLANNER_MAX_QUEUED = max(1, int(os.environ.get("PLANNER_MAX_QUEUED", 2)))
#: The dashboard's random-querying baseline (labelling/reporting/cost_view.py, docs/cost.md) replays at most
#: this many items with a gold class, 3 times, cached until they grow by a tenth.
BASELINE_MAX_ITEMS = int(os.environ.get("BASELINE_MAX_ITEMS", 2000))
#: The dashboard's per-annotator figures, agreement and quality read the project's newest labels,
#: this many (labelling/teams/agreement.py ``recent_labels``), so a poll costs the same however many
#: labels the stream has had.
DASHBOARD_LABEL_WINDOW = max(1, int(os.environ.get("DASHBOARD_LABEL_WINDOW", 5000)))
#: While a project serves honeypots or audits, what its annotators see of its figures is one
#: snapshot in the cache, rebuilt at most this often (labelling/reporting/dashboard.py
#: ``annotator_snapshot``), so that a label does not move them; 0 shows them live.
ANNOTATOR_SNAPSHOT_SECONDS = max(0, int(os.environ.get("ANNOTATOR_SNAPSHOT_SECONDS", 600)))
#: An export without a current refit job result (labelling/reporting/refit_runs.py) fits its batch
#: refit in the request on the newest this many labels (21 fits: seconds for a thousand labels on
#: 2 cores, docs/algorithms/refit.md); the console's "Refit on all labels" job fits on every label.
REFIT_REQUEST_MAX_LABELS = max(1, int(os.environ.get("REFIT_REQUEST_MAX_LABELS", 5000)))
REFIT_MAX_UNLABELLED = max(0, int(os.environ.get("REFIT_MAX_UNLABELLED", 20000)))


# ------------------------------------------------------------------------------ webhooks
#: networks a webhook may reach although they are not global (private, loopback, link-local,
#: metadata, ...): nothing by default (docs/webhooks.md, "Where deliveries may go")
WEBHOOK_ALLOWED_NETWORKS = [n.strip() for n in os.environ.get("WEBHOOK_ALLOWED_NETWORKS", "").split(",")
                            if n.strip()]
#: the wall-clock deadline of one post, from connecting to the answer's last byte (a slower
#: receiver is cut: a failed attempt, retried)
WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_TIMEOUT_SECONDS", 5))
#: the waits before each retry of a failed delivery; one attempt more than there are waits
WEBHOOK_RETRY_SECONDS = [float(s) for s in os.environ.get("WEBHOOK_RETRY_SECONDS", "10,60,300,1800,7200")
                         .split(",") if s.strip()]

# ------------------------------------------------------------------------ single sign-on
# OpenID Connect login through mozilla-django-oidc (annotator/sso.py), off unless OIDC_RP_CLIENT_ID
# is set. Users are created on their first login without any rights (not staff, no project).
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
#: the provider's issuer (``iss``), kept with each user's subject; default: the token endpoint's origin
OIDC_OP_ISSUER = os.environ.get("OIDC_OP_ISSUER", "")
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = True
OIDC_AUTHENTICATION_CALLBACK_URL = "sso-callback"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
OIDC_TIMEOUT = 10  # seconds for each call to the provider
OIDC_STORE_ID_TOKEN = False
OIDC_CREATE_USER = True


def logging_config(level: str, log_file: str | None) -> dict:
    """The LOGGING dict: the app's own loggers at ``level`` and every 500 (Django's
    ``django.request`` errors, with their traceback) to stderr, and to ``log_file`` when given.

    Django's default sends ``django.request`` errors to stderr only when DEBUG is on (and
    mails them to ADMINS otherwise): without this, production 500s would be logged nowhere.
    """
    handlers: dict = {"console": {"class": "logging.StreamHandler", "formatter": "plain"}}
    if log_file:
        # WatchedFileHandler reopens the file after logrotate moved it
        handlers["file"] = {"class": "logging.handlers.WatchedFileHandler", "filename": log_file,
                            "formatter": "plain"}
    names = list(handlers)
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": handlers,
        "loggers": {
            "annotator": {"handlers": names, "level": level},
            "django.request": {"handlers": names, "level": "ERROR", "propagate": False},
        },
    }


#: ``LOG_LEVEL`` (default INFO) for the app's loggers; ``LOG_FILE``: also log to this file.
LOGGING = logging_config(os.environ.get("LOG_LEVEL", "INFO"), os.environ.get("LOG_FILE") or None)
