"""What the conversations of conversations.py are made of: storylines and banks of turns.

Written for this evaluation (issue 30), not taken from any public benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass

# -- storylines ------------------------------------------------------------------------
# A beat: (session offset from the storyline's start, "me"|"you", text, label). "me" is
# the person the storyline is about, "you" the friend. A label names the beat for the
# questions; unlabelled beats are reactions (small talk unless they carry content).
# Questions: (kind, text, labels of the evidence beats). Texts take {me}, {you} and the
# storyline's parameters.

Beat = tuple[int, str, str, str]
QuestionSpec = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True)
class Storyline:
    name: str
    params: tuple[dict[str, str], ...]  # one is picked per use
    beats: tuple[Beat, ...]
    questions: tuple[QuestionSpec, ...]


STORYLINES: tuple[Storyline, ...] = (
    Storyline(
        "pet",
        (
            {"animal": "puppy", "breed": "beagle", "pet": "Max", "kind": "dog"},
            {"animal": "kitten", "breed": "tabby", "pet": "Luna", "kind": "cat"},
            {"animal": "puppy", "breed": "golden retriever", "pet": "Biscuit", "kind": "dog"},
        ),
        (
            (
                0,
                "me",
                "Big news: I finally adopted a {breed} {animal} from the shelter on "
                "Elm Street! We named it {pet}.",
                "adopt",
            ),
            (0, "you", "No way, that's adorable! How is {pet} settling in?", ""),
            (
                0,
                "me",
                "Pretty well, though the first night was rough, lots of crying in the crate.",
                "first-night",
            ),
            (
                2,
                "me",
                "{pet} chewed through the cable of my laptop charger yesterday, so "
                "now everything is behind the sofa.",
                "chewed",
            ),
            (2, "you", "Haha, classic. Did you get a new charger?", ""),
            (2, "me", "Yes, and a bitter spray so it leaves cables alone.", "spray"),
            (
                5,
                "me",
                "{pet} had the vet check-up this week: healthy, but the vet wants "
                "more exercise, so we walk by the river every evening.",
                "vet",
            ),
        ),
        (
            ("single-hop", "What kind of animal did {me} adopt and what is its name?", ("adopt",)),
            (
                "multi-hop",
                "What did {me}'s pet damage, and what did {me} buy because of it?",
                ("chewed", "spray"),
            ),
            ("temporal", "When did {me} adopt {pet}?", ("adopt",)),
            ("open-domain", "Does {me} take good care of {pet}'s health?", ("vet",)),
            ("temporal", "What happened with {me}'s pet in {month:chewed}?", ("chewed",)),
        ),
    ),
    Storyline(
        "race",
        (
            {"race": "half marathon", "city": "Portland", "time": "1:52", "km": "21"},
            {"race": "marathon", "city": "Chicago", "time": "4:05", "km": "42"},
            {"race": "10K trail race", "city": "Boulder", "time": "58 minutes", "km": "10"},
        ),
        (
            (
                0,
                "me",
                "I signed up for the {race} in {city}! It's my first one and I'm terrified.",
                "signup",
            ),
            (0, "you", "You'll crush it. How are you training?", ""),
            (
                0,
                "me",
                "A plan from my running club: four runs a week, the long run on Sundays.",
                "plan",
            ),
            (
                2,
                "me",
                "I hurt my left knee on a long run, so the physio has me doing "
                "strength exercises and cycling for two weeks.",
                "knee",
            ),
            (2, "you", "Oh no, take it easy. Is it serious?", ""),
            (2, "me", "Not serious, just an irritated tendon.", ""),
            (
                4,
                "me",
                "I did it! Finished the {race} in {city} in {time}, and my knee "
                "held up the whole way.",
                "finish",
            ),
            (4, "you", "Congratulations!! That's a great time for a first one.", ""),
        ),
        (
            ("single-hop", "What race did {me} sign up for?", ("signup",)),
            (
                "multi-hop",
                "Which injury did {me} have while training, and did it affect the race result?",
                ("knee", "finish"),
            ),
            ("temporal", "When did {me} run the {race}?", ("finish",)),
            ("open-domain", "Is {me} someone who sticks to a training plan?", ("plan", "finish")),
            ("temporal", "How did {me}'s race go in {month:finish}?", ("finish",)),
        ),
    ),
    Storyline(
        "job",
        (
            {
                "old": "a nurse at the county hospital",
                "new": "clinic manager",
                "company": "Riverside Health",
                "field": "health care",
            },
            {
                "old": "a backend developer at a bank",
                "new": "staff engineer",
                "company": "Lumen Labs",
                "field": "software",
            },
            {
                "old": "a high-school chemistry teacher",
                "new": "curriculum designer",
                "company": "BrightPath Learning",
                "field": "education",
            },
        ),
        (
            (
                0,
                "me",
                "I've been {old} for six years and honestly I'm burned out. I'm "
                "starting to look around.",
                "burnout",
            ),
            (0, "you", "That's a big step. What would you want instead?", ""),
            (0, "me", "Something with fewer night shifts and more say in how things run.", "want"),
            (
                2,
                "me",
                "I had a second interview at {company} for a {new} role. The panel "
                "asked a lot about handling conflict.",
                "interview",
            ),
            (3, "me", "I got the offer from {company}! I start as {new} next month.", "offer"),
            (3, "you", "I'm so proud of you! Are you celebrating?", ""),
            (3, "me", "Dinner with my parents on Saturday, they were thrilled.", "dinner"),
            (
                5,
                "me",
                "First weeks as {new}: the team is great, but the budget meetings are "
                "a whole new world for me.",
                "first-weeks",
            ),
        ),
        (
            ("single-hop", "Which company hired {me}?", ("offer",)),
            (
                "multi-hop",
                "What job did {me} leave and what role did {me} take?",
                ("burnout", "offer"),
            ),
            ("temporal", "When did {me} get the job offer?", ("offer",)),
            ("open-domain", "Was {me} unhappy in the previous job?", ("burnout", "want")),
            ("temporal", "What news did {me} have about work in {month:offer}?", ("offer",)),
        ),
    ),
    Storyline(
        "trip",
        (
            {
                "place": "Kyoto",
                "country": "Japan",
                "sight": "the bamboo forest in Arashiyama",
                "food": "matcha everything",
            },
            {
                "place": "Reykjavik",
                "country": "Iceland",
                "sight": "the northern lights",
                "food": "a hot dog stand everyone recommends",
            },
            {
                "place": "Lisbon",
                "country": "Portugal",
                "sight": "the tram up to the castle",
                "food": "custard tarts",
            },
        ),
        (
            (
                0,
                "me",
                "We booked flights to {place} for the autumn! It's been on my list forever.",
                "booked",
            ),
            (0, "you", "Amazing, what do you want to see there?", ""),
            (0, "me", "Mostly {sight}, and I want to try {food}.", "wishlist"),
            (
                3,
                "me",
                "Back from {place}! {sight} was even better than the photos, and I "
                "ate way too much.",
                "back",
            ),
            (3, "you", "Welcome back! Any bad moments?", ""),
            (
                3,
                "me",
                "Our luggage was lost for two days, so I bought clothes at a department store.",
                "luggage",
            ),
        ),
        (
            ("single-hop", "Which city did {me} travel to?", ("booked",)),
            (
                "multi-hop",
                "What went wrong on {me}'s trip to {place}, and what did {me} want to see there?",
                ("luggage", "wishlist"),
            ),
            ("temporal", "When did {me} get back from {country}?", ("back",)),
            ("open-domain", "Does {me} enjoy travelling abroad?", ("booked", "back")),
            ("temporal", "Where had {me} just come back from in {month:back}?", ("back",)),
        ),
    ),
    Storyline(
        "hobby",
        (
            {
                "hobby": "pottery",
                "thing": "a lopsided mug",
                "teacher": "Ines",
                "place": "the studio on 5th Avenue",
            },
            {
                "hobby": "the guitar",
                "thing": "Wonderwall, badly",
                "teacher": "Marco",
                "place": "the music shop downtown",
            },
            {
                "hobby": "watercolour painting",
                "thing": "a view of the harbour",
                "teacher": "Mrs. Okafor",
                "place": "the community centre",
            },
        ),
        (
            (0, "me", "I started classes in {hobby} at {place}. Totally new to me.", "start"),
            (0, "you", "Oh fun! Who teaches it?", ""),
            (
                0,
                "me",
                "A patient woman called {teacher}, she's been doing it for thirty years.",
                "teacher",
            ),
            (2, "me", "My first finished piece: {thing}. I'm weirdly proud.", "first-piece"),
            (2, "you", "Send a picture!", ""),
            (
                5,
                "me",
                "I signed up for the advanced course in {hobby}, it meets on Thursday evenings.",
                "advanced",
            ),
        ),
        (
            ("single-hop", "Who is {me}'s teacher?", ("teacher",)),
            (
                "multi-hop",
                "Where does {me} take classes, and what did {me} make first?",
                ("start", "first-piece"),
            ),
            ("temporal", "When did {me} sign up for the advanced course?", ("advanced",)),
            (
                "open-domain",
                "Would a gift card for an art supply or music store suit {me}?",
                ("start", "advanced"),
            ),
            ("temporal", "What did {me} make in {month:first-piece}?", ("first-piece",)),
        ),
    ),
    Storyline(
        "move",
        (
            {
                "from": "Denver",
                "to": "Seattle",
                "reason": "my partner's new job",
                "home": "a two-bedroom flat near Green Lake",
            },
            {
                "from": "Austin",
                "to": "Boston",
                "reason": "being closer to my mom",
                "home": "a small house in Somerville",
            },
            {
                "from": "Leeds",
                "to": "Edinburgh",
                "reason": "a fresh start",
                "home": "a top-floor flat in Leith",
            },
        ),
        (
            (0, "me", "We're moving from {from} to {to}, mostly for {reason}.", "decide"),
            (0, "you", "Wow, that's huge. Are you excited?", ""),
            (0, "me", "Excited and stressed. Packing twelve years of stuff is no joke.", ""),
            (2, "me", "We signed the lease on {home}! Moving day is in three weeks.", "lease"),
            (
                4,
                "me",
                "Finally unpacked the last box in {to}. The neighbours brought us a lasagna.",
                "unpacked",
            ),
            (4, "you", "That's so kind of them. How's the new place?", ""),
            (
                4,
                "me",
                "It rains more than I expected, but the light in the kitchen is lovely.",
                "weather",
            ),
        ),
        (
            ("single-hop", "Where did {me} move to?", ("decide",)),
            (
                "multi-hop",
                "Why did {me} move, and what kind of home did they rent?",
                ("decide", "lease"),
            ),
            ("temporal", "When did {me} sign the lease?", ("lease",)),
            (
                "open-domain",
                "Did {me} receive a friendly welcome in the new neighbourhood?",
                ("unpacked",),
            ),
            ("temporal", "What did {me} sign in {month:lease}?", ("lease",)),
        ),
    ),
    Storyline(
        "family",
        (
            {
                "relative": "sister",
                "rname": "Hannah",
                "event": "wedding",
                "where": "a barn in Vermont",
            },
            {
                "relative": "brother",
                "rname": "Leo",
                "event": "graduation",
                "where": "the university in Ann Arbor",
            },
            {
                "relative": "grandmother",
                "rname": "Rosa",
                "event": "90th birthday",
                "where": "her village near Porto",
            },
        ),
        (
            (
                0,
                "me",
                "My {relative} {rname}'s {event} is coming up at {where}, and I'm giving a speech.",
                "announce",
            ),
            (0, "you", "A speech! Have you started writing it?", ""),
            (0, "me", "A draft, full of embarrassing childhood stories.", "draft"),
            (
                3,
                "me",
                "{rname}'s {event} was perfect. I cried through my own speech and "
                "everyone laughed at the story about the treehouse.",
                "event",
            ),
            (3, "you", "Sounds like a beautiful day.", ""),
        ),
        (
            ("single-hop", "What is the name of {me}'s {relative}?", ("announce",)),
            (
                "multi-hop",
                "What event did {me} speak at, and which story made people laugh?",
                ("announce", "event"),
            ),
            ("temporal", "When was {rname}'s {event}?", ("event",)),
            ("open-domain", "Is {me} close to their {relative}?", ("announce", "event")),
            (
                "temporal",
                "What happened at {me}'s family event in {month:event}?",
                ("event",),
            ),
        ),
    ),
    Storyline(
        "garden",
        (
            {
                "crop": "tomatoes",
                "pest": "aphids",
                "fix": "ladybugs",
                "dish": "a huge batch of salsa",
            },
            {
                "crop": "zucchini",
                "pest": "slugs",
                "fix": "copper tape",
                "dish": "zucchini bread for the whole street",
            },
            {"crop": "strawberries", "pest": "birds", "fix": "netting", "dish": "strawberry jam"},
        ),
        (
            (0, "me", "I built two raised beds in the backyard and planted {crop}.", "plant"),
            (0, "you", "Ooh, a garden! Did you do it all yourself?", ""),
            (0, "me", "My neighbour lent me his drill, but yes.", ""),
            (2, "me", "Disaster: {pest} are all over the {crop}. I'm trying {fix}.", "pest"),
            (4, "me", "The harvest was huge, I made {dish}.", "harvest"),
            (4, "you", "Save me some!", ""),
        ),
        (
            ("single-hop", "What did {me} plant in the raised beds?", ("plant",)),
            (
                "multi-hop",
                "What pest attacked {me}'s garden and what came of the harvest?",
                ("pest", "harvest"),
            ),
            ("temporal", "When did {me} have trouble with {pest}?", ("pest",)),
            ("open-domain", "Does {me} like growing their own food?", ("plant", "harvest")),
            ("temporal", "What did {me} make from the garden in {month:harvest}?", ("harvest",)),
        ),
    ),
    Storyline(
        "language",
        (
            {
                "lang": "Spanish",
                "app": "evening classes",
                "partner": "Lucía",
                "goal": "a trip to Mexico City",
            },
            {
                "lang": "Japanese",
                "app": "a tutor online",
                "partner": "Kenji",
                "goal": "reading manga without a dictionary",
            },
            {
                "lang": "Italian",
                "app": "a language exchange",
                "partner": "Giulia",
                "goal": "talking to my in-laws",
            },
        ),
        (
            (0, "me", "I started learning {lang} with {app}. My goal is {goal}.", "start"),
            (0, "you", "How's it going so far?", ""),
            (0, "me", "The grammar is brutal, but I love it.", ""),
            (
                2,
                "me",
                "I found a conversation partner, {partner}, we meet for coffee on "
                "Tuesdays and switch languages halfway.",
                "partner",
            ),
            (5, "me", "I passed the A2 exam in {lang}! {partner} bought me a cake.", "exam"),
            (5, "you", "¡Felicidades! Or whatever the right word is.", ""),
        ),
        (
            ("single-hop", "Which language is {me} learning?", ("start",)),
            (
                "multi-hop",
                "Who helps {me} practise, and which exam did {me} pass?",
                ("partner", "exam"),
            ),
            ("temporal", "When did {me} pass the A2 exam?", ("exam",)),
            ("open-domain", "Is {me} motivated to learn languages?", ("start", "exam")),
            ("temporal", "What did {me} achieve with {lang} in {month:exam}?", ("exam",)),
        ),
    ),
    Storyline(
        "volunteer",
        (
            {
                "org": "the food bank",
                "task": "sorting donations",
                "day": "Saturday mornings",
                "drive": "a canned food drive",
            },
            {
                "org": "the animal shelter",
                "task": "walking the dogs",
                "day": "Sunday afternoons",
                "drive": "an adoption day in the park",
            },
            {
                "org": "the public library",
                "task": "reading to kids",
                "day": "Wednesday evenings",
                "drive": "a book swap",
            },
        ),
        (
            (0, "me", "I started volunteering at {org}, {task} on {day}.", "start"),
            (0, "you", "That's really lovely of you.", ""),
            (3, "me", "I'm organising {drive} for {org}, could you help spread the word?", "drive"),
            (3, "you", "Of course, I'll post it in my group chats.", ""),
            (5, "me", "{drive} went great, way more people came than we hoped.", "result"),
        ),
        (
            ("single-hop", "Where does {me} volunteer?", ("start",)),
            (
                "multi-hop",
                "What does {me} do at {org}, and what did {me} organise there?",
                ("start", "drive"),
            ),
            ("temporal", "When did {me} organise {drive}?", ("drive",)),
            ("open-domain", "Does {me} care about the local community?", ("start", "drive")),
            ("temporal", "What did {me} start doing in {month:start}?", ("start",)),
        ),
    ),
)

PEOPLE = (
    ("Caroline", "Melanie"),
    ("Jon", "Gina"),
    ("Priya", "Daniel"),
    ("Nate", "Joanna"),
    ("Aisha", "Tom"),
)

GREETINGS = (
    "Hey {you}! How have you been?",
    "Hi {you}, long time no talk!",
    "Good morning {you}! Got a minute?",
    "Hey! Sorry it's been a while.",
    "Hiya {you}, how's your week going?",
)
REPLIES = (
    "Hey {you}! Good, busy as always. You?",
    "Hi! All good here, just tired.",
    "Oh hey! Great to hear from you.",
    "Hi hi! Pretty good, thanks for asking.",
)
CLOSINGS = (
    "Anyway, I should get going. Talk soon!",
    "Okay, gotta run. Speak later!",
    "Let's catch up again soon, take care!",
    "Bye for now!",
    "Thanks for the chat, have a good night!",
)
REACTIONS = (
    "Haha, totally.",
    "That's great to hear!",
    "Oh wow.",
    "I know, right?",
    "Sounds good!",
    "Same here, honestly.",
    "Aww, that's sweet.",
    "Haha yes!",
)
CHATTER = (
    "The weather has been so weird lately, sunny one hour and pouring the next.",
    "I've been binge-watching a baking show, it's very soothing.",
    "Work is fine, just a lot of meetings this week.",
    "I tried a new ramen place last night, it was okay.",
    "My phone screen cracked again, I really need a case.",
    "I'm thinking of repainting the hallway, maybe a light green.",
    "Did you see the game on Sunday? What a finish.",
    "I've been sleeping badly, too much coffee I think.",
    "Traffic this morning was unbelievable.",
    "I finally cleaned out the fridge, it was scary.",
    "We had a power cut on Tuesday, lit candles and played cards.",
    "I'm reading a thriller about a lighthouse keeper, pretty gripping.",
    "My coworker Dave keeps microwaving fish in the office kitchen, it's a whole saga.",
    "We ordered pizza three times this week, no regrets.",
    "The neighbours' kid is learning the drums. Every evening. At seven.",
    "I finally watched that space documentary you mentioned, loved the part about Jupiter.",
    "My car is in the shop again, something with the brakes.",
    "I bought a plant for the office and it's already dying.",
    "I've been trying to drink more water, I have an app that nags me.",
    "There's a farmers market on Saturdays now near the station.",
    "I spent the whole evening fixing the Wi-Fi router, don't ask.",
    "Our book club picked a 900-page fantasy novel, nobody will finish it.",
    "The dentist said I grind my teeth, so now I have a night guard.",
    "I made soup from whatever was left in the fridge and it was actually good.",
    "It snowed a little this morning, then it all melted by noon.",
    "My mom called to ask how to send a photo on her phone, took an hour.",
    "I'm so tired of my commute, the bus was late three days in a row.",
    "We rearranged the living room furniture and now it feels bigger.",
)
