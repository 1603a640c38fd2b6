"""The engine and its plain data: settings, the round loop, records, sampling, text helpers."""
