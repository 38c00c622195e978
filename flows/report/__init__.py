"""What a run shows: the Prefect artifacts, the regression gate, user text as shown, what each scorer
measures, and the HTML report (html/)."""
