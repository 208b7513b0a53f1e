"""A pytest run's outcomes, read from its JUnit XML report: {node id: "passed" | "failed" |
"skipped"}, the node id made from each testcase's classname and name by nodeid(classname,
name)."""
import xml.etree.ElementTree as ET


def outcomes(report, nodeid):
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        found[nodeid(case.get("classname", ""), case.get("name"))] = outcome
    return found
