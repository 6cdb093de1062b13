"""Teams: overlap, consensus, reviews, honeypots, audit sampling, agreement and annotator quality."""
