"""The ground floor: domain values, the clock, languages, redaction, text helpers."""
