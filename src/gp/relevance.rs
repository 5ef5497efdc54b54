//! W-DBO / BOLT relevance (issue 3).
