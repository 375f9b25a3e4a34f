"""Write the binary documents of the fixture corpus: procurement-policy.pdf and clinic-records-policy.docx.

Deterministic: running it twice gives byte-identical files (reportlab's invariant mode; zip entries
re-stamped with a fixed date). Run from anywhere: `python golden/corpus/make_corpus.py`.
"""
from __future__ import annotations
import io, sys, zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXED_ZIP_DATE = (2026, 1, 1, 0, 0, 0)

PROCUREMENT = [
    ("title", "Procurement Policy"),
    ("p", "Northwind Regional Council. Policy number FIN-07, version 3.2, effective 1 July 2026. "
          "Policy owner: Chief Financial Officer. Administered by the Procurement Officer."),
    ("h1", "1. Purpose and scope"),
    ("p", "This policy sets out how Northwind Regional Council buys goods and services. It applies to all "
          "employees, contractors and volunteers who commit council funds, whatever the funding source. "
          "It does not cover the sale of council property or employment contracts, which have their own policies."),
    ("p", "The policy is reviewed every two years by the Chief Financial Officer, or sooner when legislation changes. "
          "Questions about this policy go to the Procurement Officer at procurement@northwind.example."),
    ("h1", "2. Purchase thresholds"),
    ("p", "The value of a purchase is the total expected spend over the life of the contract, including GST and "
          "any extension options. The threshold that applies decides how many quotes are needed."),
    ("table", [["Purchase value", "Requirement"],
               ["Under $10,000", "One quote (verbal or written)"],
               ["$10,000 to $100,000", "Three written quotes"],
               ["Over $100,000", "Open tender"]]),
    ("h2", "2.1 Purchases under $10,000"),
    ("p", "Purchases under $10,000 need one quote, which may be verbal or written. Staff should still check that "
          "the price is reasonable. A corporate purchasing card may be used for single transactions up to $5,000."),
    ("h2", "2.2 Purchases from $10,000 to $100,000"),
    ("p", "Purchases from $10,000 to $100,000 need three written quotes. The quotes are compared on the "
          "quote comparison form (form PR-02), which records price, delivery time and any conditions. If fewer "
          "than three suppliers respond, the reason must be written on the form."),
    ("h2", "2.3 Purchases over $100,000"),
    ("p", "Purchases over $100,000 must go to open tender. The tender is advertised on the council tenders portal "
          "for at least 21 days. Bids are assessed by an evaluation panel of at least three members, one of whom "
          "must come from outside the team that requested the purchase."),
    ("h2", "2.4 Splitting purchases"),
    ("p", "Splitting a purchase into smaller orders to stay under a threshold is prohibited and is treated as a "
          "breach of this policy."),
    ("h1", "3. Approval authority"),
    ("p", "Every purchase must be approved before the order is placed, by the person holding the delegation for "
          "its value band. Nobody may approve a purchase that they requested or from which they benefit."),
    ("table", [["Value band", "Approver"],
               ["Up to $5,000", "Team lead"],
               ["$5,000 to $50,000", "Department director"],
               ["$50,000 to $250,000", "Chief Financial Officer"],
               ["$250,000 to $1,000,000", "Chief Executive Officer"],
               ["Over $1,000,000", "Council board"]]),
    ("p", "Approvals are recorded in the finance system before a purchase order number is issued. An order placed "
          "without approval must be reported to the Procurement Officer within 5 business days."),
    ("h1", "4. Exemptions and emergencies"),
    ("p", "In an emergency that threatens life, property or essential services, a department director may approve "
          "purchases up to $50,000 without quotes. The Chief Financial Officer must confirm the purchase in writing "
          "within 2 business days."),
    ("p", "Where only one supplier can provide the goods or services, a sole supplier justification (form PR-05) "
          "must be approved by the Chief Financial Officer before the purchase."),
    ("h1", "5. Contracts register"),
    ("p", "Every contract worth more than $25,000 must be recorded in the contracts register within 10 business "
          "days of signing. The register is maintained by the Procurement Officer and records the supplier, the "
          "contract value, the start and end dates, and the contract owner."),
    ("p", "A summary of contracts worth more than $100,000 is published on the council website every quarter. "
          "Contract owners review their entries every six months and update variations within 10 business days."),
    ("h1", "6. Conflicts of interest"),
    ("p", "Anyone involved in a purchase must declare any actual, potential or perceived conflict of interest in "
          "writing, on the declaration form PR-04, before taking part in the evaluation. A person with a conflict "
          "must step aside from the evaluation and the approval."),
    ("p", "Gifts or hospitality worth more than $100 must be declared in the gifts register within 5 business days. "
          "No gift of any value may be accepted from a supplier that is taking part in an open tender."),
    ("h1", "7. Record keeping"),
    ("p", "Procurement records (quotes, evaluation reports, approvals and contracts) are kept for 7 years after the "
          "contract ends. They are stored in the council records system, not in personal email or on local drives."),
    ("h1", "8. Breaches"),
    ("p", "Suspected breaches of this policy are reported to the Procurement Officer. Serious or repeated breaches "
          "are reported to the Audit and Risk Committee, which meets every quarter."),
]

CLINIC = [
    ("title", "Clinic Health Records Policy"),
    ("p", "Harbourside Family Clinic. Document CR-01, version 4, approved by the Practice Manager on 3 February 2026. "
          "This policy applies to every doctor, nurse, receptionist, contractor and student who handles patient information."),
    ("h1", "Classification levels"),
    ("p", "All clinic information is classified at one of four levels. The level decides where the information may "
          "be stored and who may see it."),
    ("table", [["Level", "Examples", "Handling"],
               ["Public", "Opening hours, fee schedule", "May be published"],
               ["Internal", "Rosters, meeting notes", "Staff only"],
               ["Confidential", "Billing records, staff files", "Named roles only"],
               ["Restricted", "Health records, test results", "Treating team only, two-factor sign-in"]]),
    ("p", "Health records are always classified as Restricted. Restricted information may only be opened from clinic "
          "devices with two-factor sign-in, and never from personal devices."),
    ("h1", "Retention periods"),
    ("p", "Health records of adult patients are kept for 7 years after the patient's last visit. Health records of "
          "patients who were under 18 at their last visit are kept until the patient turns 25. Billing records are "
          "kept for 5 years and appointment logs for 2 years."),
    ("table", [["Record", "Retention"],
               ["Adult health record", "7 years after the last visit"],
               ["Health record of a minor", "Until the patient turns 25"],
               ["Billing record", "5 years"],
               ["Appointment log", "2 years"]]),
    ("h2", "Destruction"),
    ("p", "Records past their retention period are destroyed by secure shredding or certified electronic erasure. "
          "Each destruction is approved by the Practice Manager and entered in the destruction register with the "
          "patient identifier, the record type and the date."),
    ("h1", "Access to records"),
    ("p", "Staff open a health record only when they need it to care for that patient. Every access is logged, and "
          "the Privacy Officer reviews the access log every month."),
    ("p", "Patients may ask for a copy of their own record. The clinic answers such requests within 30 days and "
          "does not charge for electronic copies."),
    ("h1", "Breach handling"),
    ("p", "A data breach is any unauthorised access to, disclosure of, or loss of personal information. Any staff "
          "member who suspects a breach must notify the Privacy Officer within 24 hours of discovering it, and "
          "must not try to investigate it alone."),
    ("p", "The Privacy Officer contains the breach first, for example by recalling a message or disabling an account, "
          "and then assesses whether it is an eligible data breach. The assessment must be completed within 30 days."),
    ("p", "If the breach is likely to cause serious harm, the clinic notifies the Office of the Australian Information "
          "Commissioner (OAIC) and the affected patients. The clinic's target is to notify the OAIC within 72 hours "
          "of confirming an eligible breach. Every breach, eligible or not, is entered in the breach register."),
    ("h1", "Secure communication"),
    ("p", "Clinical information is sent to other providers by secure messaging, not by fax. The clinic's fax machines "
          "were decommissioned on 31 March 2026. Referrals, letters and results go through the secure messaging "
          "service built into the practice software."),
    ("p", "Health information is never sent by ordinary email. If a patient asks for email, the file is sent "
          "encrypted and the password is given to the patient by phone."),
    ("h1", "Training"),
    ("p", "Every staff member completes privacy training when they start and a refresher every 12 months. "
          "Completion is recorded by the Practice Manager."),
]


def write_pdf(path: Path, blocks) -> None:
    "Procurement policy as a PDF, headings in larger type so the loader can recover them."
    from reportlab import rl_config
    rl_config.invariant = 1                      # no timestamps or random document ids
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import SimpleDocTemplate, Paragraph, Table, Spacer
    ss = getSampleStyleSheet()
    style = {"title": ss["Title"], "h1": ss["Heading1"], "h2": ss["Heading2"], "p": ss["BodyText"]}
    story = []
    for kind, value in blocks:
        if kind == "table": story += [Table(value, hAlign="LEFT"), Spacer(1, 8)]
        else: story.append(Paragraph(value.replace("&", "&amp;"), style[kind]))
    SimpleDocTemplate(str(path), pagesize=A4, title=blocks[0][1], author="Northwind Regional Council",
                      creator="make_corpus.py", producer="make_corpus.py").build(story)


def write_docx(path: Path, blocks) -> None:
    "Clinic records policy as a DOCX with Heading styles and real tables."
    import docx, datetime
    d = docx.Document()
    cp = d.core_properties
    cp.title, cp.author = blocks[0][1], "Harbourside Family Clinic"
    cp.created = cp.modified = datetime.datetime(2026, 2, 3)
    cp.last_modified_by, cp.revision = "make_corpus.py", 1
    for kind, value in blocks:
        if kind == "title": d.add_heading(value, 0)
        elif kind in ("h1", "h2"): d.add_heading(value, int(kind[1]))
        elif kind == "p": d.add_paragraph(value)
        else:
            t = d.add_table(rows=len(value), cols=len(value[0]))
            for r, row in enumerate(value):
                for c, v in enumerate(row): t.cell(r, c).text = v
    buf = io.BytesIO(); d.save(buf)
    path.write_bytes(_restamp_zip(buf.getvalue()))


def _restamp_zip(raw: bytes) -> bytes:
    "The same zip with every entry dated FIXED_ZIP_DATE, in the same order."
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            zi = zipfile.ZipInfo(info.filename, FIXED_ZIP_DATE)
            zi.compress_type, zi.external_attr = zipfile.ZIP_DEFLATED, 0o600 << 16
            dst.writestr(zi, src.read(info.filename))
    return out.getvalue()


def main(out: Path = HERE) -> list[Path]:
    "Write both binary documents into `out`."
    out.mkdir(parents=True, exist_ok=True)
    write_pdf(out / "procurement-policy.pdf", PROCUREMENT)
    write_docx(out / "clinic-records-policy.docx", CLINIC)
    return [out / "procurement-policy.pdf", out / "clinic-records-policy.docx"]


if __name__ == "__main__":
    for p in main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE): print(p.name, p.stat().st_size)
