"""The table: a results directory's records read once into typed tables (read: the one
reader; parse: the pyarrow parse of net.jsonl; frame: the column path's pandas frame).

May import: reports.shared, reports.table
"""
