class SpecError(Exception):
    """A malformed spec, reported as `file:line: message` and failing the build."""

    def __init__(self, file, line, message):
        super().__init__(f"{file}:{line}: {message}")
        self.file, self.line, self.message = file, line, message
