"""The ``pbmserv-terrace`` command line: the top layer (it may import everything)."""
