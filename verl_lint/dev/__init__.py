"""Developer tools that are not part of linting: the bash differential oracle."""
