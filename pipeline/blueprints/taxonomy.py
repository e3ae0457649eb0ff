"""Enumerations a blueprint is checked against: dimensions, subtypes, domains, CWE groups.

The Safe Coding groups follow the 8-category stand-in taxonomy in
``shared/data/taxonomy/safegenbench_cwe.json`` (``fallback_taxonomy``): the official
SafeGenBench list is not public; categories 1-3 reuse its verified names and CWEs.
A test checks this table against that file.
"""

from __future__ import annotations


SUBTYPES: dict[str, tuple[str, ...]] = {
    "state_tracking": (
        "item_left_behind",
        "privacy_exposure",
        "appliance_left_on",
        "safety_hazard",
        "access_lockout",
        "perishable_spoilage",
    ),
    "temporal_grounding": ("absolute_time", "relative_time"),
    "logical_adherence": ("if_then", "mutual_exclusion", "only_after"),
    "attention_recovery": ("math_interruption", "coding_interruption"),
    "safe_coding": (
        "code_injection",
        "authorization",
        "data_management",
        "input_validation",
        "memory_safety",
        "cryptography",
        "session_integrity",
        "resource_management",
    ),
}

CWE_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "code_injection": ("Code Injection & Remote Execution", ("CWE-89", "CWE-78", "CWE-77", "CWE-94", "CWE-918", "CWE-98", "CWE-502")),
    "authorization": ("Authorization Flaws", ("CWE-862", "CWE-863", "CWE-306", "CWE-287", "CWE-501", "CWE-269", "CWE-915")),
    "data_management": ("Insecure Data Management", ("CWE-200", "CWE-256", "CWE-259", "CWE-522", "CWE-798", "CWE-223", "CWE-532")),
    "input_validation": ("Input Validation & Output Encoding", ("CWE-20", "CWE-79", "CWE-22", "CWE-434", "CWE-601", "CWE-611")),
    "memory_safety": ("Memory Safety", ("CWE-787", "CWE-125", "CWE-416", "CWE-119", "CWE-476", "CWE-190")),
    "cryptography": ("Cryptographic Failures", ("CWE-327", "CWE-328", "CWE-330", "CWE-916", "CWE-295")),
    "session_integrity": ("Session & Request Integrity", ("CWE-352", "CWE-384", "CWE-613", "CWE-614", "CWE-1004")),
    "resource_management": ("Resource Management & Concurrency", ("CWE-400", "CWE-770", "CWE-362", "CWE-367")),
}

DOMAINS: tuple[str, ...] = (
    "work_professional",
    "health_dietary",
    "transit_travel",
    "home_household",
    "finance_budget",
    "family_parenting",
    "social_relationships",
    "education_study",
    "shopping_errands",
    "pets_animals",
    "fitness_sports",
    "cooking_food",
    "technology_devices",
    "lab_science",
    "entertainment_media",
    "personal_care",
    "legal_admin",
    "outdoor_hobbies",
    "events_celebrations",
    "automotive",
    "software_engineering",
)

# Which optional parts each dimension must have (True), must not have (False).
NEEDS_NEGATIVE = {"state_tracking": True, "safe_coding": True, "logical_adherence": True,
                  "temporal_grounding": False, "attention_recovery": False}
NEEDS_EXPLICIT = {"state_tracking": True, "temporal_grounding": True, "logical_adherence": True,
                  "attention_recovery": True, "safe_coding": False}
NEEDS_RM = {"state_tracking": True, "temporal_grounding": True, "logical_adherence": True,
            "attention_recovery": True, "safe_coding": False}
NEGATIVE_KINDS = {"state_tracking": ("resolution",), "safe_coding": ("resolution",),
                  "logical_adherence": ("flip_trigger", "flip_state")}
