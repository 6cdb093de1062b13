"""Disagreement reviews catch up with the consensus once, where it changed before.

Until now the review queue copied the disputed items in (and dropped the unleased reviews of
items settled meanwhile) only when a reviewer opened it, so the reviews API and the counts lagged.
From now on the reviews follow each consensus where it changes (``consensus.sync_reviews``,
docs/teams.md, "Review"); this brings existing projects to that state: every disputed item
(aggregated, status ``disputed``) without a disagreement review gets one, and the open
disagreement reviews of items the team settled (``agreed`` or ``majority``), leased or not, are
dropped. Decided reviews, reviews of adjudicated items (a reviewer may have reopened their
decision) and reviews an admin queued for items without a consensus are left alone.
"""

from django.db import migrations


def catch_up(apps, schema_editor):
    Consensus = apps.get_model("labelling", "Consensus")
    Review = apps.get_model("labelling", "Review")
    reason = "disagreement"
    have = set(Review.objects.filter(reason=reason).values_list("item_id", flat=True))
    missing = [(item_id, project_id) for item_id, project_id in
               Consensus.objects.filter(status="disputed", due=False).values_list("item_id", "project_id")
               if item_id not in have]
    Review.objects.bulk_create([Review(project_id=project_id, item_id=item_id, reason=reason)
                                for item_id, project_id in missing], ignore_conflicts=True)
    settled = Consensus.objects.filter(status__in=("agreed", "majority")).values("item_id")
    Review.objects.filter(reason=reason, decided_at__isnull=True, item_id__in=settled).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('labelling', '0032_refitrun'),
    ]

    operations = [
        migrations.RunPython(catch_up, migrations.RunPython.noop),
    ]
