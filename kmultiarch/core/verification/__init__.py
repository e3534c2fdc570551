"""Whether an image's binaries really run on the platforms it claims: executable headers
(``binaries``), a layer's tar entries and the file system they make (``layers``), and the
verdict that searches them from the entrypoint (``verdicts``). Pure: the bytes come from
kmultiarch.resolve. It may import ``images`` only.
"""
