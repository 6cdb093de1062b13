"""Reporting: metrics, the dashboard, the cost view, the delta planner, exports and the in-app simulation."""
