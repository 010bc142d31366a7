//! Why two keys differ (placeholder replaced below).
