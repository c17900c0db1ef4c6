"""The only code that speaks SQL: embedded server, connections, migrations, memories, rules."""
