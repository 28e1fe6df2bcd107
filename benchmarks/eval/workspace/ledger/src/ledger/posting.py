"""Validate and post journal entries. A posted entry is never changed again."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from ledger.errors import TooManyLines, UnbalancedEntry
from ledger.models import Account, JournalEntry, JournalLine
from sqlalchemy import select
from sqlalchemy.orm import Session

MAX_LINES_PER_ENTRY = 500


@dataclass(frozen=True)
class LineInput:
    account_code: str
    currency: str
    debit: int = 0
    credit: int = 0


def ensure_balanced(lines: Sequence[LineInput]) -> None:
    """Debits must equal credits in every currency, not just in total."""
    totals: dict[str, int] = defaultdict(int)
    for line in lines:
        totals[line.currency] += line.debit - line.credit
    unbalanced = {cur: diff for cur, diff in totals.items() if diff != 0}
    if unbalanced:
        raise UnbalancedEntry(unbalanced)


def lock_accounts(session: Session, codes: Sequence[str]) -> dict[str, Account]:
    """Lock in ascending id order: two postings touching the same accounts in a
    different order would otherwise deadlock."""
    stmt = (
        select(Account)
        .where(Account.code.in_(sorted(set(codes))))
        .order_by(Account.id)
        .with_for_update()
    )
    return {account.code: account for account in session.scalars(stmt)}


def post_entry(
    session: Session, booking_date: date, memo: str, lines: Sequence[LineInput]
) -> JournalEntry:
    if len(lines) > MAX_LINES_PER_ENTRY:
        raise TooManyLines(len(lines), MAX_LINES_PER_ENTRY)
    ensure_balanced(lines)
    accounts = lock_accounts(session, [line.account_code for line in lines])
    entry = JournalEntry(booking_date=booking_date, memo=memo)
    for line in lines:
        account = accounts[line.account_code]
        entry.lines.append(
            JournalLine(
                account_id=account.id,
                currency=line.currency,
                debit=line.debit,
                credit=line.credit,
            )
        )
        account.balance += line.debit - line.credit
    session.add(entry)
    return entry


def reverse_entry(session: Session, entry: JournalEntry, booking_date: date) -> JournalEntry:
    """The only way to correct a posted entry: post its mirror image."""
    mirrored = [
        LineInput(line.account.code, line.currency, debit=line.credit, credit=line.debit)
        for line in entry.lines
    ]
    return post_entry(session, booking_date, f"Reversal of {entry.id}", mirrored)
