"""One module per lifecycle verb."""
