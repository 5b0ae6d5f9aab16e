"""`gpudoc info --from`: reports pasted from other machines read into the live path's InfoReport.

text.py reads a file and strips what pasting adds (Markdown fences, `> ` quotes, indentation);
detect.py recognises each format by its content; one parser module per format turns its text into
`Facts` (facts.py); build.py merges the facts of every report into one InfoReport, with the
sources each fact came from. A fact no report gives stays unknown (None), never guessed.
"""
