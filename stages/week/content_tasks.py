"""Text pools for tasks, cues, channels and lures (original wording for this project).

In: nothing. Out: immutable tuples the generator samples from with a seeded rng. Every
action text is unique across pools, so a menu never shows two identical actions.
"""

from __future__ import annotations

from dataclasses import dataclass

CHANNELS: tuple[tuple[str, str, str], ...] = (
    ("clock", "snapshot", "current time and minutes since 07:00"),
    ("email", "delta", "new messages since the last change"),
    ("calendar", "delta", "changes to calendar entries"),
    ("course_portal", "delta", "course announcements, grades and quizzes"),
    ("price_tracker", "snapshot", "current prices of watched items"),
    ("bank_balance", "snapshot", "current account balance"),
    ("shipment_status", "snapshot (process)", "delivery lifecycle of an order"),
    ("laundry_status", "snapshot (process)", "washer and dryer cycle"),
    ("library_hold", "delta", "library hold and loan notices"),
    ("reservation_waitlist", "delta", "waitlist openings"),
    ("appointment_portal", "delta", "clinic portal notices"),
)

# What a channel shows when nothing relevant is happening.
CHANNEL_IDLE: dict[str, str] = {
    "email": "No new messages since your last check.",
    "calendar": "No calendar changes.",
    "course_portal": "No new course announcements.",
    "price_tracker": "Watched items: no price changes today.",
    "bank_balance": "Balance $1,284.50; nothing pending.",
    "shipment_status": "No active shipments.",
    "laundry_status": "Washer and dryer idle.",
    "library_hold": "No library notices.",
    "reservation_waitlist": "No waitlist openings.",
    "appointment_portal": "No new portal notices.",
}

# Irrelevant updates on delta channels (selective monitoring: not every update is a cue).
CHANNEL_NOISE: dict[str, tuple[str, ...]] = {
    "email": ("New message from the gym: this week's class timetable.", "New message: a newsletter about city parks."),
    "calendar": ("Calendar change: the book club moved to next month.", "Calendar: a colleague accepted your invite."),
    "course_portal": ("Course portal: the lecture slides were re-uploaded.",),
    "library_hold": ("Library notice: extended weekend opening hours.",),
    "reservation_waitlist": ("Waitlist: you are still number four for the pottery class.",),
    "appointment_portal": ("Appointment portal: the clinic updated its parking info.",),
}


@dataclass(frozen=True)
class RoutineSpec:
    """A regular task repeated across days; ``cues`` are alternative cue sentences."""

    slug: str
    action: str
    trigger: str  # "at {time}" for time routines, "when ..." for event routines
    daypart: str  # morning / afternoon / evening / any
    cues: tuple[str, ...] = ()


TIME_ROUTINES: tuple[RoutineSpec, ...] = (
    RoutineSpec("bp_pill", "Take the blood-pressure pill", "at {time}", "any"),
    RoutineSpec("stretches", "Do the physio stretches", "at {time}", "any"),
    RoutineSpec("water_glass", "Drink a full glass of water", "at {time}", "any"),
    RoutineSpec("feed_cat", "Feed the cat", "at {time}", "any"),
    RoutineSpec("eye_drops", "Put in the eye drops", "at {time}", "any"),
)

EVENT_ROUTINES: tuple[RoutineSpec, ...] = (
    RoutineSpec("antibiotic", "Take the antibiotic", "with breakfast", "morning", (
        "You sit down to a bowl of oatmeal for breakfast.",
        "Breakfast is on the table: toast and scrambled eggs.",
        "You start breakfast with a slice of rye bread and jam.")),
    RoutineSpec("vitamin_d", "Take the vitamin D tablet", "when dinner is served", "evening", (
        "Dinner is served: a pot of lentil soup steams on the table.",
        "You plate up dinner, pasta with roasted peppers.",
        "Dinner arrives at the table, still sizzling.")),
    RoutineSpec("herbs", "Water the windowsill herbs", "when you get back home", "afternoon", (
        "You unlock the front door and step back into your flat.",
        "Back home at last, you drop your bag by the door.",
        "You climb the stairs and let yourself back into the apartment.")),
    RoutineSpec("recycling", "Take the recycling out", "when you hear the garbage truck", "morning", (
        "The garbage truck rumbles and beeps down the street outside.",
        "Outside, the garbage truck's hydraulic arm clanks.",
        "You hear the garbage truck reversing at the end of the block.")),
    RoutineSpec("mailbox", "Check the mailbox", "when you pass the lobby", "any", (
        "You pass through the lobby beside the row of mailboxes.",
        "The lobby smells of floor polish as you walk past the mailboxes.",
        "You cut through the lobby on your way past the mailboxes.")),
)

# One-off time tasks: "<action> at <time>".
ONE_OFF_ACTIONS: tuple[tuple[str, str], ...] = (
    ("library_email", "Send the library email"),
    ("pharmacy_call", "Call the pharmacy about the refill"),
    ("move_car", "Move the car for street cleaning"),
    ("timesheet", "Submit the timesheet"),
    ("parking_fine", "Pay the parking fine online"),
    ("dentist_confirm", "Call the dentist to confirm"),
    ("plumber_code", "Text the plumber the door code"),
    ("wedding_rsvp", "RSVP to the wedding invitation"),
    ("electricity", "Schedule the electricity payment"),
    ("grandma_call", "Call grandma"),
    ("spin_class", "Book a spot in the spin class"),
    ("visa_photo", "Upload the visa photo"),
    ("lasagna_recipe", "Send Maya the lasagna recipe"),
    ("insurance_claim", "File the insurance claim form"),
    ("bike_pass", "Renew the bike-share pass"),
    ("standup_notes", "Post the stand-up notes"),
)


@dataclass(frozen=True)
class EventSpec:
    """A narrative- or cross-day event task: action, trigger phrase, cue sentences."""

    slug: str
    action: str
    trigger: str
    cues: tuple[str, ...]


NARRATIVE_EVENTS: tuple[EventSpec, ...] = (
    EventSpec("cushions", "Bring the balcony cushions inside", "when it starts to rain", (
        "Fat raindrops start hitting the window.", "A sudden shower begins drumming on the roof.")),
    EventSpec("drill", "Return the neighbour's drill", "when you see Ravi in the hallway", (
        "Your neighbour Ravi steps out into the hallway.", "Ravi from next door is in the hallway sorting his post.")),
    EventSpec("manager", "Check in with your manager about the roadmap", "when the stand-up ends", (
        "The stand-up wraps up and people drop off the call.", "The stand-up ends and the video tiles vanish.")),
    EventSpec("budget", "Send the budget note to finance", "when Priya mentions the quarterly numbers", (
        "Priya brings up the quarterly numbers over coffee.", "Priya starts talking about the quarterly numbers.")),
    EventSpec("umbrella", "Return Lena's umbrella", "when you bump into Lena", (
        "Lena waves at you from across the courtyard.", "You nearly collide with Lena at the corner.")),
    EventSpec("boarding_pass", "Print the boarding pass", "when the office printer is free", (
        "The queue at the office printer finally clears.", "Nobody is waiting at the office printer now.")),
    EventSpec("oat_milk", "Buy oat milk", "when you pass the corner shop", (
        "You walk past the corner shop with its fruit crates outside.", "The corner shop's bell jingles as you pass.")),
    EventSpec("charger", "Ask Tom for your laptop charger back", "when Tom joins the meeting", (
        "Tom joins the meeting a minute late.", "Tom slips into the meeting room with a coffee.")),
    EventSpec("group_photo", "Send the group photo to the family chat", "when the guests leave", (
        "The last guests say goodbye at the door.", "Your guests pull on their coats and head out.")),
    EventSpec("dishwasher", "Unload the dishwasher", "when the dishwasher beeps", (
        "The dishwasher gives three short beeps.", "A chirp from the kitchen: the dishwasher is done.")),
    EventSpec("prescription", "Pick up the prescription", "when you are near the pharmacy", (
        "The green cross of the pharmacy sign comes into view.", "You find yourself right outside the pharmacy.")),
    EventSpec("slides_feedback", "Give Sam feedback on the slides", "when Sam finishes the rehearsal", (
        "Sam finishes the rehearsal run-through.", "Sam clicks to the last slide and ends the rehearsal.")),
    EventSpec("stamps", "Buy stamps", "when you reach the post office", (
        "You reach the post office counter.", "You step into the post office, ticket in hand.")),
    EventSpec("bike_tire", "Pump up the bike tire", "when you get to the bike shed", (
        "You step into the bike shed behind the building.", "The bike shed door creaks open.")),
    EventSpec("library_book", "Return the overdue library book", "when you pass the library", (
        "The library's glass doors slide open as you pass.", "You walk by the library steps.")),
    EventSpec("cake", "Take the cake out of the oven", "when the oven timer rings", (
        "The oven timer starts ringing in the kitchen.", "The oven timer goes off with a shrill ring.")),
    EventSpec("thank_ana", "Thank Ana for hosting", "when Ana calls", (
        "Your phone lights up with a call from Ana.", "Ana is calling you.")),
    EventSpec("coffee_beans", "Order more coffee beans", "when the coffee tin runs empty", (
        "You scrape the bottom of an empty coffee tin.", "The coffee tin is empty.")),
    EventSpec("spare_key", "Hand the spare key to the cleaner", "when the cleaner arrives", (
        "The doorbell rings: the cleaner has arrived.", "The cleaner arrives with a bucket and mop.")),
    EventSpec("bus_card", "Top up the bus card", "when you reach the ticket machine", (
        "You stand in front of the station ticket machine.", "The ticket machine at the station is free.")),
    EventSpec("meeting_notes", "Share the meeting notes", "when the client call ends", (
        "The client hangs up and the call window closes.", "The client call ends with a round of goodbyes.")),
    EventSpec("sunscreen", "Put on sunscreen", "when the sun comes out", (
        "The clouds part and bright sunshine floods the street.", "The sun breaks through the clouds.")),
    EventSpec("batteries", "Drop the old batteries in the recycling box", "when you enter the supermarket", (
        "You walk through the supermarket's sliding doors.", "You push a trolley into the supermarket.")),
    EventSpec("filter", "Pick up the replacement filter", "when the hardware counter clears", (
        "The queue at the hardware store counter clears.", "The hardware store counter is finally free.")),
    EventSpec("heartworm", "Give Max his heartworm chew", "when Max comes back from his walk", (
        "Max bounds back in from his walk, leash trailing.", "The dog walker returns Max, muddy and happy.")),
    EventSpec("call_mom", "Call Mom back", "when the movie ends", (
        "The credits start rolling on the movie.", "The movie ends and the lights come up.")),
    EventSpec("lunch_box", "Put the lunch box in the office fridge", "when you arrive at the office", (
        "You badge in at the office entrance.", "The office lift opens onto your floor.")),
    EventSpec("tire_pressure", "Check the car's tire pressure", "when you stop at the gas station", (
        "You pull into the gas station forecourt.", "You stop at the gas station pumps.")),
)

CROSS_DAY_EVENTS: tuple[EventSpec, ...] = (
    EventSpec("pickup_code", "Bring the pickup code", "when you notice the package locker light", (
        "The package locker light by the entrance is blinking.",)),
    EventSpec("tent", "Return the borrowed tent to Omar", "when Omar drops by", ("Omar drops by to say hello.",)),
    EventSpec("permission_slip", "Hand in the signed permission slip", "when you see the school office open", (
        "The school office door stands open.",)),
    EventSpec("loyalty_card", "Ask the barber about the loyalty card", "when you sit in the barber's chair", (
        "You settle into the barber's chair.",)),
    EventSpec("birthday_card", "Give Nina her birthday card", "when Nina arrives at the party", (
        "Nina arrives at the party with a bunch of balloons.",)),
    EventSpec("rattle", "Ask the mechanic about the rattling noise", "when you drop the car at the garage", (
        "You hand your car keys over at the garage desk.",)),
    EventSpec("projector", "Hand back the projector", "when the AV technician stops by", (
        "The AV technician stops by your desk.",)),
    EventSpec("lunch_debt", "Pay Leo back for lunch", "when Leo sits down next to you", (
        "Leo sits down next to you with a tray.",)),
    EventSpec("salad", "Bring the potluck salad", "when you leave for the potluck", (
        "You grab your coat to leave for the potluck.",)),
)

# New triggers an override can switch an event task to (the action text stays the same).
OVERRIDE_TRIGGERS: tuple[tuple[str, str], ...] = (
    ("when the follow-up text comes in", "A follow-up text buzzes in on your phone."),
    ("when your partner gets home", "Your partner's keys jingle in the front door."),
    ("when the afternoon break starts", "Everyone gets up for the afternoon break."),
    ("when the courier has left", "The courier waves and drives off."),
    ("when the kettle boils", "The kettle clicks off, steam curling from the spout."),
    ("when the power comes back", "The lights flicker back on after a short outage."),
)


@dataclass(frozen=True)
class ChannelSpec:
    """A channel-triggered task: the cue shows only in ``channel``'s state."""

    slug: str
    channel: str
    action: str
    trigger: str
    cue: str
    before: str = ""  # snapshot/process channels: status before the change
    progress: str = ""  # process channels: the in-progress stage
    after: str = ""  # snapshot/process channels: status after the change


CHANNEL_EVENTS: tuple[ChannelSpec, ...] = (
    ChannelSpec("landlord", "email", "Reply to the landlord about the lease", "when the landlord's email arrives",
                "New message from your landlord: lease renewal terms attached."),
    ChannelSpec("receipt", "email", "Forward the conference receipt to accounting", "when the receipt email lands",
                "New message from EventHub: your conference receipt."),
    ChannelSpec("checkup", "calendar", "Move the dentist check-up", "when the offsite gets scheduled",
                "Calendar change: the team offsite now overlaps your dentist check-up."),
    ChannelSpec("design_review", "calendar", "Respond to the moved design review", "when the design review is moved",
                "Calendar change: the organizer moved the design review."),
    ChannelSpec("lab_report", "course_portal", "Download the graded lab report", "when lab grades are released",
                "Course portal: grades for Lab 3 are out."),
    ChannelSpec("reading_quiz", "course_portal", "Submit the reading quiz", "when the reading quiz opens",
                "Course portal: the week 6 reading quiz is now open."),
    ChannelSpec("headphones", "price_tracker", "Buy the noise-cancelling headphones", "when they drop below $80",
                "Price alert: the noise-cancelling headphones dropped to $74.",
                before="Noise-cancelling headphones: $96.", after="Noise-cancelling headphones: holding at $74."),
    ChannelSpec("train_fare", "price_tracker", "Book the Saturday train tickets", "when the fare drops under $40",
                "Fare watch: the Saturday train fare fell to $36.",
                before="Saturday train fare: $52.", after="Saturday train fare: $36, unchanged."),
    ChannelSpec("rent", "bank_balance", "Pay the rent transfer", "when your paycheck clears",
                "Paycheck cleared: balance now $3,412.60.",
                before="Balance $812.40; paycheck pending.", after="Balance $3,412.60."),
    ChannelSpec("concert_money", "bank_balance", "Send Jo the money for the concert", "when the airline refund lands",
                "Airline refund received: balance now $1,047.10.",
                before="Balance $702.10; refund pending.", after="Balance $1,047.10."),
    ChannelSpec("parcel", "shipment_status", "Pick up the parcel from the front desk", "when the parcel is delivered",
                "Parcel delivered to the front desk.", before="Parcel at the local depot.",
                progress="Parcel out for delivery with the courier.", after="Parcel waiting at the front desk."),
    ChannelSpec("blender", "shipment_status", "Test the new blender", "when the blender is delivered",
                "Blender delivered to your doorstep.", before="Blender order confirmed.",
                progress="Blender on the delivery van, three stops away.", after="Blender delivered earlier."),
    ChannelSpec("wash", "laundry_status", "Move the wash to the dryer", "when the washing machine finishes",
                "Washer finished: load ready.", before="Washer loaded, not started.",
                progress="Washer running: rinse cycle.", after="Washer door unlocked; load inside."),
    ChannelSpec("sheets", "laundry_status", "Fold the bedsheets", "when the dryer finishes",
                "Dryer finished: bedsheets are dry.", before="Dryer loaded with bedsheets.",
                progress="Dryer running: 20 minutes left.", after="Dryer stopped; bedsheets inside."),
    ChannelSpec("hold", "library_hold", "Pick up the hold at the library", "when the hold is ready",
                "Hold ready: 'The Overstory' is waiting at the front desk."),
    ChannelSpec("cookbook", "library_hold", "Renew the borrowed cookbook", "when the renewal window opens",
                "Library notice: the cookbook can now be renewed."),
    ChannelSpec("table", "reservation_waitlist", "Confirm the restaurant table", "when a table opens up",
                "Waitlist: a table for two opened at Trattoria Sole."),
    ChannelSpec("climbing", "reservation_waitlist", "Claim the bouldering slot", "when a bouldering spot opens",
                "Waitlist: a spot opened in the evening bouldering session."),
    ChannelSpec("intake", "appointment_portal", "Finish the intake form", "when the portal posts it",
                "Appointment portal: your intake form has been posted."),
    ChannelSpec("physio", "appointment_portal", "Book the physio appointment", "when a physio slot opens",
                "Appointment portal: a physio slot just opened."),
)

LURES: tuple[tuple[str, str], ...] = tuple(
    (text.lower().replace(" ", "_").replace("'", "").replace(",", ""), text)
    for text in (
        "Clean the mug in the sink", "Grab the grocery bag", "Reorganize the bookshelf", "Polish your shoes",
        "Wipe the kitchen counter", "Sort the junk drawer", "Defrost the freezer", "Update the phone apps",
        "Repot the basil", "Descale the kettle", "Back up photos to the cloud", "Close the browser tabs",
        "Dust the ceiling fan", "Replace the shower curtain", "Refill the stapler", "Rearrange the spice rack",
        "Vacuum the car seats", "Oil the squeaky hinge", "Frame the holiday print", "Sharpen the kitchen knives",
        "Buy a birthday candle", "Print the gym schedule", "Call the bank about a new card", "Email the book club",
        "Book a haircut", "Return the library DVD", "Pick up the dry cleaning", "Renew the passport",
        "Text Jamie about the weekend", "Order printer ink", "Pay the water bill", "Cancel the magazine subscription",
        "Schedule an eye exam", "Charge the power bank", "Buy light bulbs", "Sign the farewell card",
        "Wash the car", "Take the antihistamine", "Check the smoke alarm", "Send the holiday photos to Dad",
    )
)

PEOPLE: tuple[str, ...] = ("Sam", "Priya", "your sister", "Jordan", "your partner", "Mia", "Ben", "your manager")
