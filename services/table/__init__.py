"""table: owns rooms and runs hands through the engines in games/."""
