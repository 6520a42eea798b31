"""Time constants: the one definition of a year, a month and a day in dcplan.

dcplan counts a year as 365 days (8,760 h), as site climate data (hourly bins that sum
to 8,760 h) and tariffs do; a month is a twelfth of that year (730 h), so demand in
tokens per month, energy per year and tokens per kWh all use the same clock. Leap days
are ignored (0.07 % per year).
"""

from __future__ import annotations

#: Hours in a year [h] (365 days).
HOURS_PER_YEAR = 8760.0
#: Seconds in a day [s].
SECONDS_PER_DAY = 86_400.0
#: Seconds in a year [s] (365 days).
SECONDS_PER_YEAR = HOURS_PER_YEAR * 3600.0
#: Seconds in a month [s] (a twelfth of a year: 730 h).
SECONDS_PER_MONTH = SECONDS_PER_YEAR / 12.0
#: Hours in a month [h].
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0
