"""Day archetypes and step vignettes (ongoing activity + A/B/C options), original wording.

In: nothing. Out: immutable pools. Vignettes never state a clock time, so the current time
stays hidden unless the agent queries the clock.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_NAMES: tuple[str, ...] = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class Archetype:
    """A kind of day: step-count range and how steps spread over morning/afternoon/evening."""

    name: str
    title: str
    steps: tuple[int, int]
    dayparts: tuple[float, float, float]


ARCHETYPES: tuple[Archetype, ...] = (
    Archetype("meeting_heavy", "a meeting-heavy workday", (11, 13), (0.40, 0.45, 0.15)),
    Archetype("chore_heavy", "a chore-heavy day at home", (10, 12), (0.35, 0.35, 0.30)),
    Archetype("errand_run", "a day of errands across town", (11, 13), (0.30, 0.50, 0.20)),
    Archetype("study_day", "a study day before an exam", (10, 12), (0.30, 0.40, 0.30)),
    Archetype("travel_day", "a travel day with a long train ride", (10, 12), (0.45, 0.35, 0.20)),
    Archetype("social_day", "a social day with friends and family", (10, 13), (0.20, 0.40, 0.40)),
    Archetype("recovery_day", "a slow recovery day with appointments", (10, 12), (0.35, 0.35, 0.30)),
    Archetype("deadline_crunch", "a deadline crunch at work", (11, 13), (0.35, 0.40, 0.25)),
)

DAYPARTS: tuple[tuple[str, int, int], ...] = (("morning", 7 * 60, 12 * 60), ("afternoon", 12 * 60, 17 * 60),
                                              ("evening", 17 * 60, 22 * 60))


@dataclass(frozen=True)
class Vignette:
    """A short scene and its three ongoing-activity options."""

    text: str
    options: tuple[str, str, str]


VIGNETTES: dict[str, tuple[Vignette, ...]] = {
    "morning": (
        Vignette("You wake up to grey light through the curtains.",
                 ("Stretch in bed", "Open the blinds", "Check the weather app")),
        Vignette("The flat is quiet while the radiator ticks.",
                 ("Make the bed", "Put the radio on", "Fill the kettle")),
        Vignette("You stand at the bathroom mirror, still half asleep.",
                 ("Brush your teeth", "Shave", "Splash cold water")),
        Vignette("Your phone shows a handful of overnight notifications.",
                 ("Skim the headlines", "Clear the badges", "Put it face down")),
        Vignette("You pick out clothes for the day.",
                 ("Wear the blue jumper", "Wear the linen shirt", "Wear the hoodie")),
        Vignette("The street below is busy with commuters.",
                 ("Watch for a minute", "Close the window", "Water the fern")),
        Vignette("You pack your bag for the day ahead.",
                 ("Add a notebook", "Add a water bottle", "Add headphones")),
        Vignette("A pigeon lands on the windowsill and stares at you.",
                 ("Shoo it away", "Take a photo", "Ignore it")),
        Vignette("You sort through yesterday's receipts on the table.",
                 ("File them", "Bin them", "Photograph them")),
        Vignette("The hallway smells of a neighbour's toast.",
                 ("Open a window", "Hum a tune", "Tie your shoes")),
        Vignette("You read a few pages of your novel.",
                 ("Read one more chapter", "Bookmark it", "Make notes")),
        Vignette("You wipe condensation off the window.", ("Draw a smiley", "Use a cloth", "Leave it")),
    ),
    "afternoon": (
        Vignette("You settle into a desk by the window.",
                 ("Answer a chat", "Tidy the desk", "Refill your glass")),
        Vignette("A long spreadsheet waits for review.", ("Fix a formula", "Add a chart", "Sort a column")),
        Vignette("The café is noisy with the lunchtime crowd.",
                 ("Order a sandwich", "Find a corner seat", "Take it to go")),
        Vignette("You walk along the canal path.", ("Walk faster", "Stop at a bench", "Take the bridge")),
        Vignette("A colleague asks for help with a bug.", ("Pair on it", "Send a link", "Suggest a break")),
        Vignette("The train rocks gently between stations.",
                 ("Doze a little", "Read an article", "Look out of the window")),
        Vignette("You tidy the living room.",
                 ("Fold the blanket", "Plump the pillows", "Stack the magazines")),
        Vignette("Your inbox shows a backlog of newsletters.",
                 ("Unsubscribe from one", "Archive them", "Star one")),
        Vignette("You queue at a busy crossing.", ("Wait for green", "Take the underpass", "Check your map")),
        Vignette("You work through a practice problem set.",
                 ("Try problem four", "Check the answers", "Take notes")),
        Vignette("A delivery van blocks half the road.", ("Walk around it", "Wait", "Cross the street")),
        Vignette("You sit in a waiting room with old magazines.",
                 ("Flip a magazine", "Stare at the fish tank", "Close your eyes")),
    ),
    "evening": (
        Vignette("The streetlights flicker on outside.",
                 ("Draw the curtains", "Light a candle", "Put on slippers")),
        Vignette("You chop vegetables on the counter.",
                 ("Dice the onion", "Slice the carrots", "Rinse the board")),
        Vignette("A podcast plays quietly in the background.", ("Turn it up", "Skip the ad", "Pause it")),
        Vignette("You sit on the sofa with a cup of tea.",
                 ("Put your feet up", "Call a friend", "Browse recipes")),
        Vignette("The building's hallway is quiet.",
                 ("Take out a bag", "Check the noticeboard", "Head back in")),
        Vignette("You lay out tomorrow's clothes.", ("Iron the shirt", "Pick socks", "Polish the belt")),
        Vignette("A board game sits half-finished on the table.",
                 ("Take your turn", "Tidy the pieces", "Read the rules")),
        Vignette("You scroll through photos from the weekend.",
                 ("Delete blurry ones", "Make an album", "Share one")),
        Vignette("The dishes are piled in the sink.", ("Wash them", "Soak them", "Leave them")),
        Vignette("You write in your journal.", ("Write a page", "Doodle", "Close it")),
        Vignette("Wind rattles the skylight.", ("Listen for a while", "Check the latch", "Turn on a lamp")),
        Vignette("You brush your teeth before bed.", ("Floss", "Use mouthwash", "Set an alarm")),
    ),
}
