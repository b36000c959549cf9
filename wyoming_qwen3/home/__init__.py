"""A home's own names, read from Home Assistant: what goes into the model's context, and the commands a turn may
end on. Imports no torch."""
