"""Phrase patterns of the salience rule: :data:`BOILERPLATE_PATTERNS` (sign-offs, attestations, discharge and billing
statements) and :data:`SMALL_TALK_PATTERNS` (greetings, thanks, pleasantries), regular-expression sources that
:mod:`engine.evidence.text.salience` compiles and removes from a segment before reading what remains."""

# Phrases no good summary carries. Each is removed from the segment; what remains decides (step 1 and step 3).
_STAMP = (r"(?:[\s,]*(?:on|at|@|date:?|time:?)?\s*(?:\d{1,2}[/-]\d{1,2}[/-]\d{2,4}|\d{4}-\d{2}-\d{2}|"
          r"\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]\.?m\.?)?))*")  # a sign-off's date / time stamp
_NAME = (r"(?:\s*:?\s*(?:(?:dr|doctor)\.?\s+)?(?-i:[A-Z][\w.'-]*)(?:\s+(?-i:[A-Z][\w.'-]*)){0,3})?"
         r"(?:,?\s*(?:md|do|np|pa-c|pa|rn|mbbs|phd|facp|facc)\b\.?)*")  # a capitalised name and credentials
BOILERPLATE_PATTERNS: tuple[str, ...] = (
    # signatures and sign-offs (they consume their own name and date/time stamp)
    r"\b(?:electronically\s+|digitally\s+)?(?:signed|co-?signed|authenticated|verified)(?:\s+electronically)?"
    r"\s+by\b" + _NAME + _STAMP,
    r"\b(?:dictated|transcribed|entered)\s+by\b" + _NAME + _STAMP,
    r"\bdictated\s+(?:but|and)\s+not\s+(?:read|reviewed|signed)\b",
    r"\bthis\s+(?:note|document|report|dictation)\s+(?:was|has\s+been|may\s+have\s+been)\s+(?:dictated|generated|"
    r"created|prepared|transcribed)\s+(?:using|with|by)\b(?:\s+(?:voice|speech)\s+recognition)?(?:\s+software)?",
    r"\b(?:voice|speech)\s+recognition(?:\s+software)?\b",
    r"\bplease\s+excuse\s+(?:any\s+)?(?:typographical\s+|transcription\s+|grammatical\s+|spelling\s+)?errors\b",
    r"\bnote\s+(?:is\s+)?(?:incomplete|pending)\s+until\s+signed\b",
    # understanding, agreement, questions
    r"\b(?:verbali[sz]e[sd]?|expresse[sd]|voice[sd]|demonstrate[sd]|indicate[sd]|verbali[sz]ing|expressing)\s+"
    r"(?:good\s+|full\s+|clear\s+)?understanding(?:\s+and\s+agreement)?(?:\s+(?:of|with))?(?:\s+(?:the|this|our|all))?"
    r"(?:\s+(?:above|plan|instructions|discharge|treatment|care|of|recommendations|and|agrees?|with|is|in|agreement))*",
    r"\b(?:understands|understood)\s+(?:and\s+agrees?\s+with\s+)?(?:the\s+)?(?:plan|instructions)\b",
    r"\b(?:repeated|read)\s+back\s+(?:the\s+)?(?:instructions|plan)\b",
    r"\b(?:is\s+|was\s+)?(?:in\s+)?agree(?:ment|able|s|d)?\s+(?:with\s+|to\s+)?(?:the\s+|this\s+|our\s+)?"
    r"(?:above\s+|treatment\s+|current\s+)?plan(?:\s+of\s+care)?\b",
    r"\b(?:all\s+)?(?:of\s+)?(?:(?:his|her|their|the\s+patient's|pt's)\s+)?(?:questions|concerns)(?:\s+and\s+concerns)?"
    r"(?:\s+were|\s+have\s+been|\s+was)?\s+(?:answered|addressed)(?:\s+to\s+(?:his|her|their|the\s+patient's)\s+"
    r"satisfaction)?",
    r"\b(?:discussed|reviewed)\s+(?:with|w/)\s+(?:the\s+)?(?:pt|patient|family|wife|husband|parents?|caregivers?|"
    r"him|her|them)\b",
    r"\bplan\s+(?:was\s+)?(?:discussed|reviewed)\s+with\s+(?:the\s+)?(?:pt|patient|family)\b",
    r"\b(?:strict\s+)?(?:return|ed|er)\s+precautions(?:\s+(?:were|was|have\s+been))?(?:\s+(?:given|reviewed|"
    r"discussed|provided))?",
    r"\b(?:patient|pt)\s+(?:was\s+|is\s+)?(?:instructed|advised|educated|counseled|counselled)\s+(?:to|on|about|"
    r"regarding)\b",
    r"\bcall\s+(?:the\s+)?(?:clinic|office|us|your\s+doctor|911)?\s*(?:or\s+return\s+)?"
    r"(?:(?:to\s+the\s+)?(?:ed|er)\s+)?"
    r"(?:if|with|for)\s+(?:any\s+)?(?:questions|concerns)",
    # attestations and templates
    r"\bi\s+(?:have\s+)?(?:personally\s+)?(?:seen|saw|examined|evaluated|interviewed)(?:\s+and\s+(?:examined|"
    r"evaluated|interviewed))?\s+(?:the\s+|this\s+)?(?:patient|pt)\b",
    r"\bi\s+(?:have\s+)?reviewed\s+(?:the\s+)?(?:resident|fellow|np|pa|student|house\s*staff)(?:'?s)?\s+"
    r"(?:note|documentation|history|findings)\b",
    r"\b(?:and\s+)?(?:i\s+)?agree\s+with\s+(?:the\s+)?(?:above|resident|fellow|findings|assessment|plan|"
    r"documentation)(?:'?s)?(?:\s+(?:findings|assessment|and|plan|as|documented|above|note))*",
    r"\b(?:teaching\s+physician|attending)\s+(?:attestation|statement|note)\b",
    r"\bi\s+was\s+present\s+for\s+(?:the\s+)?(?:key|critical|entire)\s+portions?\b",
    r"\btotal\s+time(?:\s+spent)?(?:\s+on\s+(?:this|the)\s+(?:date|day|encounter|visit))?(?:\s+of\s+(?:the\s+)?"
    r"(?:encounter|visit|service))?\s*:?\s*(?:was\s*)?(?:>|greater\s+than|more\s+than|over)?\s*\d+\s*"
    r"(?:min(?:ute)?s?)\b",
    r"(?:>|\bgreater\s+than|\bmore\s+than|\bover)\s*(?:50\s*%|half)(?:\s+of\s+(?:the|this)\s+(?:time|visit|encounter))?"
    r"(?:\s+was)?\s+spent\s+(?:in|on)\s+(?:counsel+ing|coordination)(?:\s+(?:and|of|care|coordination|counsel+ing))*",
    # discharge boilerplate
    r"\bfollow(?:-|\s)?up\s+(?:with|w/)\s+(?:your\s+)?(?:pcp|primary\s+care(?:\s+(?:provider|physician|doctor))?|"
    r"doctor)(?:\s+as\s+(?:needed|directed|scheduled))?",
    r"\b(?:take|continue)\s+(?:all\s+)?(?:your\s+)?(?:home\s+)?medications\s+as\s+(?:prescribed|directed)\b",
    r"\b(?:discharge|dc)\s+instructions(?:\s+(?:were|was))?\s+(?:given|reviewed|provided|discussed)\b",
    r"\b(?:patient|pt)\s+(?:is\s+|was\s+)?(?:stable|safe)\s+for\s+discharge\b",
)

SMALL_TALK_PATTERNS: tuple[str, ...] = (
    # greetings
    r"\b(?:hello|hi|hey|hiya|good\s+(?:morning|afternoon|evening)|welcome(?:\s+back|\s+in)?)\b",
    r"\b(?:(?:it's|it\s+is)\s+)?(?:nice|good|great|pleasure)\s+to\s+(?:meet|see)\s+you(?:\s+again|\s+too)?",
    r"\bhow\s+are\s+you(?:\s+doing)?(?:\s+(?:today|tonight|this\s+(?:morning|afternoon|evening)))?",
    r"\bhow(?:'s|\s+is|\s+has)\s+it\s+going\b|\bhow\s+have\s+you\s+been\b",
    r"\b(?:i'm|i\s+am|doing)\s+(?:doing\s+)?(?:good|fine|well|great|okay|ok|alright|all\s+right)(?:\s+thanks?)?\b",
    r"\bnot\s+(?:too\s+)?bad\b|\bcan't\s+complain\b",
    # thanks, goodbyes
    r"\bthank\s+you(?:\s+(?:so|very)\s+much)?"
    r"(?:\s+for\s+(?:coming(?:\s+in)?|your\s+time|that|having\s+me|seeing\s+me))?",
    r"\bthanks(?:\s+(?:so\s+much|a\s+lot))?\b|\byou(?:'re|\s+are)\s+welcome\b|\bmy\s+pleasure\b|\bno\s+problem\b",
    r"\b(?:i\s+)?appreciate\s+(?:it|that|you)\b",
    r"\b(?:bye|goodbye|good\s+bye|bye-bye)\b|\bsee\s+you(?:\s+(?:later|soon|then|next\s+time))?\b|\btake\s+care\b",
    r"\bhave\s+a\s+(?:good|great|nice|wonderful)\s+(?:day|one|weekend|evening|night|afternoon)\b|\byou\s+too\b",
    # pleasantries and conversation management
    r"\b(?:how(?:'s|\s+is|\s+was)\s+)?(?:the\s+)?(?:weather|traffic|parking)\b",
    r"\b(?:did\s+you\s+)?have\s+a\s+(?:good|nice|great)\s+(?:weekend|holiday|trip|vacation)\b",
    r"\bwhat\s+(?:brings|brought)\s+you\s+in(?:\s+today)?\b|\bwhat\s+can\s+i\s+do\s+for\s+you(?:\s+today)?\b",
    r"\b(?:go\s+ahead\s+and\s+)?have\s+a\s+seat\b|\bhave\s+a\s+look\b|"
    r"\blet\s+me\s+(?:just\s+)?(?:pull\s+up|take\s+a\s+look\s+at)\s+"
    r"(?:your|the)\s+(?:chart|record|notes)\b",
    r"\b(?:do\s+you\s+have\s+)?any\s+(?:other\s+)?questions(?:\s+for\s+me)?\b",
    r"\b(?:that\s+)?sounds\s+(?:good|great|fine|like\s+a\s+plan)\b|\bgot\s+it\b|\bi\s+see\b|"
    r"\b(?:that\s+)?makes\s+sense\b",
    r"\bof\s+course\b|\bno\s+worries\b|\b(?:good|glad)\s+to\s+hear(?:\s+that|\s+it)?\b|\bi'm\s+glad\b",
    r"\b(?:let's|let\s+us)\s+(?:get\s+started|talk\s+about\s+that|go\s+ahead)\b",
)
