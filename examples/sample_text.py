"""Word lists and sentence templates of the sample generator (English and Chinese)."""

ACTIVITIES = (
    ("kayaking", "划皮划艇"), ("hiking", "徒步"), ("birdwatching", "观鸟"), ("cycling", "骑行"),
    ("sketching", "写生"), ("fishing", "钓鱼"), ("rock climbing", "攀岩"), ("snorkelling", "浮潜"),
    ("stargazing", "观星"), ("paddleboarding", "玩桨板"), ("sailing", "驾帆船"), ("picnicking", "野餐"),
)
PLACES = (
    ("Lisbon harbour", "里斯本港"), ("Lake Bled", "布莱德湖"), ("Table Mountain", "桌山"),
    ("Halong Bay", "下龙湾"), ("Lake Geneva", "日内瓦湖"), ("Bondi Beach", "邦迪海滩"),
    ("Loch Ness", "尼斯湖"), ("Mount Fuji", "富士山"), ("Niagara Falls", "尼亚加拉瀑布"),
    ("Milford Sound", "米尔福德峡湾"), ("Lake Tahoe", "太浩湖"), ("Cape Point", "开普角"),
)
NAMES = {"en": ("Alice Morgan", "Ben Carter", "Chloe Davies", "Daniel Evans"),
         "Chinese": ("李明", "王芳", "张伟", "刘洋")}
OCCUPATIONS = ("teacher", "nurse", "software engineer", "architect", "chef")
ORDINALS = {"en": ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
                   "ninth", "tenth"),
            "Chinese": tuple(f"第{c}张" for c in "一二三四五六七八九十")}
# Place suffixes of later trips once every (activity, place) pair has been used (sessions > 144).
TRIPS = {"en": tuple(f" ({o} trip)" for o in ORDINALS["en"][1:]),
         "Chinese": tuple(f"（第{c}次）" for c in "二三四五六七八九十")}
DIGIT_WORDS = {"en": ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"),
               "Chinese": tuple("零一二三四五六七八九")}
TEXT = {
    "en": {
        "intro": "Today I went {act} at {place}.\nIt was one of those days I want to remember.",
        "reply": "That sounds wonderful! What was {act} at {place} like?",
        "thanks": "Thanks for the photo from {act} at {place}. It looks like a great moment.",
        "user": ("The best part of {act} at {place} was how calm everything felt.",
                 "I would love to go {act} at {place} again next year.",
                 "My friends were surprised that I tried {act} at {place}.",
                 "Before going {act} at {place} I was a bit nervous, but it went well."),
        "assistant": ("It sounds like {place} suits you. Would you go {act} there again?",
                      "I will remember that you enjoyed {act} at {place}.",
                      "Spending a day {act} at {place} sounds perfect."),
        "event": "{Act} at {place}", "event_phrase": "{act} at {place}",
        "goal": "Tell the assistant about {act} at {place} and share photos.",
        "photo": "the {ordinal} photo I showed you when I went {act} at {place}",
        "only_photo": "the photo I showed you when I went {act} at {place}",
        "colour_q": "What colour was the background of {photo}?",
        "digit_q": "Which digit was shown on the sign in {photo}?",
        "sum_q": "What is the sum of the digits shown in {photo} and in {photo2}?",
        "first_q": "Which did I do first: {event} or {event2}?",
        "where_q": "Where did I go {act}?",
    },
    "Chinese": {
        "intro": "今天我去{place}{act}了。\n这是我想一直记住的一天。",
        "reply": "听起来很棒！在{place}{act}感觉怎么样？",
        "thanks": "谢谢你分享在{place}{act}的照片，看起来很美好。",
        "user": ("在{place}{act}最棒的是那种平静的感觉。", "我以后还想再去{place}{act}。",
                 "朋友们都很惊讶我去{place}{act}了。", "去{place}{act}之前我有点紧张，不过一切都很顺利。"),
        "assistant": ("看来你很喜欢{place}。你还会再去那里{act}吗？", "我会记住你喜欢在{place}{act}。",
                      "在{place}{act}真是度过一天的好方式。"),
        "event": "在{place}{act}", "event_phrase": "在{place}{act}",
        "goal": "和助手聊聊在{place}{act}的经历，并分享照片。",
        "photo": "我去{place}{act}时给你看的{ordinal}照片", "only_photo": "我去{place}{act}时给你看的那张照片",
        "colour_q": "{photo}，背景是什么颜色？", "digit_q": "{photo}，牌子上显示的是哪个数字？",
        "sum_q": "{photo}和{photo2}上的数字加起来是多少？", "first_q": "我先做的是哪件事：{event}，还是{event2}？",
        "where_q": "我是在哪里{act}的？",
    },
}
