"""Signed webhooks: a project's events posted to the URLs its admins register (docs/webhooks.md).

* :mod:`.addresses`: where a delivery may go (http(s) only; no private, loopback, link-local,
  metadata or other non-global address unless ``WEBHOOK_ALLOWED_NETWORKS`` allows it), checked
  when a URL is registered and again on the resolved address at every delivery.
* :mod:`.endpoints`: registering, listing, rotating the secret of and deleting endpoints.
* :mod:`.outbox`: :func:`.outbox.emit`, the cheap write where an event happens (one outbox row
  per subscribed endpoint, in the caller's transaction; nothing when none subscribes).
* :mod:`.events`: the events the worker notices after its runs (model version, import
  finished, budget reached).
* :mod:`.delivery`: the worker's side: claim due rows, post them signed (Standard Webhooks),
  record the answer, retry with back-off.

A domain package: it never sends tasks; the worker (:mod:`..worker.tasks`) delivers.
"""
