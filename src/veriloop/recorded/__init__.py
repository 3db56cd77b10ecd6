"""Recorded generations as data: other systems' answers imported into run directories
(`importer`, formats `answers`, `selfverification`, `inspect_log`), and recorded answers
judged again by another verifier without generating (`rescore`)."""
